# Megatron-LM arguments for mixtral-8x7b on 64 x H100-SXM (dgx-h100: 8 nodes x 8 GPUs)
# plan: tp=2 pp=4 dp=8 ep=8 zero=1 sp full mb=1 1f1b (32 microbatches of 1 x 4096 tokens per step)
# targets: NVIDIA/Megatron-LM commit 000c4ac24f61159c138b0975def722c65245983c
# (megatron/training/arguments.py, validate_args, TransformerConfig); add your data,
# tokenizer, optimizer, learning-rate and checkpoint arguments
# note: with --bf16 Megatron-LM accumulates and reduces gradients in FP32 unless --grad-reduce-in-bf16 is given; the plan counted 2-byte gradients
# note: vocabulary: 32000 tokens, set by your tokenizer (or --vocab-size with --tokenizer-type NullTokenizer); a multiple of 128 x tp, so not padded
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 --nnodes 8 pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 4 \
    --expert-model-parallel-size 8 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 1 \
    --micro-batch-size 1 \
    --global-batch-size 256 \
    --seq-length 4096 \
    --max-position-embeddings 32768 \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 14336 \
    --num-attention-heads 32 \
    --group-query-attention \
    --num-query-groups 8 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --rotary-base 1000000 \
    --attention-dropout 0 \
    --hidden-dropout 0 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --num-experts 8 \
    --moe-router-topk 2 \
    --moe-ffn-hidden-size 14336 \
    --moe-grouped-gemm \
    --moe-token-dispatcher-type alltoall \
    --bf16

# Megatron-LM arguments for llama3-70b on 64 x H100-SXM (dgx-h100: 8 nodes x 8 GPUs)
# plan: tp=8 pp=4 vpp=5 dp=2 zero=1 sp selective mb=1 interleaved-1f1b (256 microbatches of 1 x 8192 tokens per step)
# targets: NVIDIA/Megatron-LM commit 000c4ac24f61159c138b0975def722c65245983c
# (megatron/training/arguments.py, validate_args, TransformerConfig); add your data,
# tokenizer, optimizer, learning-rate and checkpoint arguments
# note: with --bf16 Megatron-LM accumulates and reduces gradients in FP32 unless --grad-reduce-in-bf16 is given; the plan counted 2-byte gradients
# note: vocabulary: 128256 tokens, set by your tokenizer (or --vocab-size with --tokenizer-type NullTokenizer); Megatron pads it to 129024 (a multiple of 128 x tp 8), 768 rows the plan does not count
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 --nnodes 8 pretrain_gpt.py \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 4 \
    --num-layers-per-virtual-pipeline-stage 4 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --recompute-granularity selective \
    --micro-batch-size 1 \
    --global-batch-size 512 \
    --seq-length 8192 \
    --max-position-embeddings 8192 \
    --num-layers 80 \
    --hidden-size 8192 \
    --ffn-hidden-size 28672 \
    --num-attention-heads 64 \
    --group-query-attention \
    --num-query-groups 8 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --rotary-base 500000 \
    --attention-dropout 0 \
    --hidden-dropout 0 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --bf16

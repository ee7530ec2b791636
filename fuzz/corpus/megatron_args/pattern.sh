torchrun --nproc_per_node=4 --nnodes 2 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --num-experts 4 --moe-layer-freq "([0]*2+[1]*6)" --data-path "a b" c

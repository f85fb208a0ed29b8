# The int16 path of codegen/ukernels/qgemm_avx2.h, simplified: per iteration 6 rows x 16 columns x 2 k = 192 MACs (vpmaddwd + vpaddd)
vmovdqu (%rsi), %ymm12
vmovdqu 32(%rsi), %ymm13
vpbroadcastd (%rdi), %ymm14
vpmaddwd %ymm12, %ymm14, %ymm15
vpaddd %ymm15, %ymm0, %ymm0
vpmaddwd %ymm13, %ymm14, %ymm15
vpaddd %ymm15, %ymm1, %ymm1
vpbroadcastd 4(%rdi), %ymm14
vpmaddwd %ymm12, %ymm14, %ymm15
vpaddd %ymm15, %ymm2, %ymm2
vpmaddwd %ymm13, %ymm14, %ymm15
vpaddd %ymm15, %ymm3, %ymm3
vpbroadcastd 8(%rdi), %ymm14
vpmaddwd %ymm12, %ymm14, %ymm15
vpaddd %ymm15, %ymm4, %ymm4
vpmaddwd %ymm13, %ymm14, %ymm15
vpaddd %ymm15, %ymm5, %ymm5
vpbroadcastd 12(%rdi), %ymm14
vpmaddwd %ymm12, %ymm14, %ymm15
vpaddd %ymm15, %ymm6, %ymm6
vpmaddwd %ymm13, %ymm14, %ymm15
vpaddd %ymm15, %ymm7, %ymm7
vpbroadcastd 16(%rdi), %ymm14
vpmaddwd %ymm12, %ymm14, %ymm15
vpaddd %ymm15, %ymm8, %ymm8
vpmaddwd %ymm13, %ymm14, %ymm15
vpaddd %ymm15, %ymm9, %ymm9
vpbroadcastd 20(%rdi), %ymm14
vpmaddwd %ymm12, %ymm14, %ymm15
vpaddd %ymm15, %ymm10, %ymm10
vpmaddwd %ymm13, %ymm14, %ymm15
vpaddd %ymm15, %ymm11, %ymm11

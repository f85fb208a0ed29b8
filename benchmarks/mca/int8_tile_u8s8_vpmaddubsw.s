# The u8s8 path (vpmaddubsw, then vpmaddwd with ones, then vpaddd; onnxruntime MLAS style): 6 rows x 16 columns x 4 k = 384 MACs
# ymm11 holds the int16 ones; 12 accumulators and the ones need 17 registers, so the last row's
# second product adds into ymm10 again (a real kernel keeps 5.5 rows): throughput per MAC is what this measures.
vmovdqu (%rsi), %ymm12
vmovdqu 32(%rsi), %ymm13
vpbroadcastd (%rdi), %ymm14
vpmaddubsw %ymm12, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm0, %ymm0
vpmaddubsw %ymm13, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm1, %ymm1
vpbroadcastd 4(%rdi), %ymm14
vpmaddubsw %ymm12, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm2, %ymm2
vpmaddubsw %ymm13, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm3, %ymm3
vpbroadcastd 8(%rdi), %ymm14
vpmaddubsw %ymm12, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm4, %ymm4
vpmaddubsw %ymm13, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm5, %ymm5
vpbroadcastd 12(%rdi), %ymm14
vpmaddubsw %ymm12, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm6, %ymm6
vpmaddubsw %ymm13, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm7, %ymm7
vpbroadcastd 16(%rdi), %ymm14
vpmaddubsw %ymm12, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm8, %ymm8
vpmaddubsw %ymm13, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm9, %ymm9
vpbroadcastd 20(%rdi), %ymm14
vpmaddubsw %ymm12, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm10, %ymm10
vpmaddubsw %ymm13, %ymm14, %ymm15
vpmaddwd %ymm15, %ymm11, %ymm15
vpaddd %ymm15, %ymm10, %ymm10

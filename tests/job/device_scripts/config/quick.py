batch_size = 4
block_size = 16
n_embd = 32

# bytearray zero-fills, so every page is touched and charged at once.
chunks = []
while True:
    chunks.append(bytearray(16 << 20))

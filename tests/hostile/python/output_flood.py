import sys

block = "A" * 65536
while True:
    sys.stdout.write(block)

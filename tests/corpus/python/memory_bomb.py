# expect: memory
# policy: preset=python;memory=512M
"""Allocating without end under a 512 MiB address-space limit: MemoryError,
which the runtime reports as memory_hint."""
hoard = []
while True:
    hoard.append(bytearray(32 << 20))

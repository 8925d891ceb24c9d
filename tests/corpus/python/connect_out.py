# expect: violation connect
# listener: yes
"""Connecting out through a socket that leaked into the job (PREPARED_FD was
created before the sandbox): connect is denied, nothing reaches the
listener. libc's connect is called directly: socket.socket(fileno=...)
would first ask getsockname, itself denied."""
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
addr = struct.pack("=H", socket.AF_INET) + struct.pack("!H", PORT) + socket.inet_aton("127.0.0.1") + bytes(8)
libc.connect(PREPARED_FD, addr, len(addr))
print("done: connected")

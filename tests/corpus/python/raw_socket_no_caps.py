# expect: error
# policy: preset=none
# output: PermissionError: [Errno 1] Operation not permitted
"""Using a capability: a raw socket needs CAP_NET_RAW, dropped even under
preset none (no seccomp filter at all), so the kernel says EPERM."""
import socket
socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
print("done: raw socket")

# expect: violation socket
"""Networking: creating any socket is denied."""
import socket
socket.socket(socket.AF_INET, socket.SOCK_STREAM)
print("done: socket")

# expect: violation socket
"""Blocking SIGSYS to make a violation anonymous: the mask change is
emulated without SIGSYS, so the socket call is still named."""
import signal, socket
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGSYS})
print("blocked:", signal.SIGSYS in signal.pthread_sigmask(signal.SIG_BLOCK, []))
socket.socket()

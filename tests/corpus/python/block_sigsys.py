# expect: violation socket
"""Blocking SIGSYS to make a violation anonymous: the block works, and
changes nothing — violations do not travel as signals."""
import signal, socket
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGSYS})
print("blocked:", signal.SIGSYS in signal.pthread_sigmask(signal.SIG_BLOCK, []))
socket.socket()

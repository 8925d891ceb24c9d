# expect: violation socket
"""Installing a SIGSYS handler to hide later violations: allowed, and
useless — a denied call is a notification to the supervisor, never a
signal to the job, so the handler never runs."""
import signal, socket
signal.signal(signal.SIGSYS, lambda *a: print("done: own handler ran"))
socket.socket()

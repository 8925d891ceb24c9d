# expect: violation clone3
"""Jobs are single-threaded: glibc's pthread_create uses clone3 (with every
signal blocked around it: the notification is named all the same)."""
import threading
t = threading.Thread(target=lambda: None)
t.start()
t.join()
print("done: thread")

# expect: violation openat
# absent: {tmp}/written
"""Opening a file for writing (O_WRONLY|O_CREAT|O_TRUNC): the argument
filter on openat's flags denies it."""
with open(TMP + "/written", "w") as f:
    f.write("pwned\n")

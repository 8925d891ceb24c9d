# expect: error
# policy: preset=python;fs=libs
# output: PermissionError
# absent: {tmp}/pwned
# never: done:
"""Writing without a write= path under Landlock: the open reaches the
kernel (the filter leaves writes to Landlock) and is refused."""
with open(TMP + "/pwned", "w") as f:
    f.write("x")
print("done: wrote")

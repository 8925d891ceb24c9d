"""Where the fitrun executable is, for a Runner that was not told."""
import os
import shutil

from ._errors import RunnerError


def find_fitrun(explicit=None):
    """The fitrun executable, first match of:

    1. ``explicit`` (the Runner's ``fitrun=`` argument): a path, or a name
       looked up in PATH;
    2. the ``FITRUN`` environment variable (the same);
    3. ``<package>/../../fitrun``: a build tree, where CMake copies the
       package to ``build/python/fitrun/`` next to ``build/fitrun``;
    4. ``fitrun`` in PATH (an installed fitrun).
    """
    for source, value in (("fitrun=", explicit), ("FITRUN=", os.environ.get("FITRUN"))):
        if value:
            found = _executable(value)
            if not found:
                raise RunnerError(f"{source}{value}: not an executable file")
            return found
    here = os.path.dirname(os.path.abspath(__file__))
    in_build_tree = os.path.join(os.path.dirname(os.path.dirname(here)), "fitrun")
    if os.path.isfile(in_build_tree) and os.access(in_build_tree, os.X_OK):
        return in_build_tree
    found = shutil.which("fitrun")
    if not found:
        raise RunnerError("no fitrun executable: pass fitrun=PATH, set FITRUN, or put fitrun in PATH")
    return found


def _executable(value):
    if os.sep in value:
        return os.path.abspath(value) if os.path.isfile(value) and os.access(value, os.X_OK) else None
    return shutil.which(value)

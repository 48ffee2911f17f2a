"""collection.pyz's start-up (its `__main__.py`, written by build_zipapp.py): stdlib only.

The pyz holds the wheels of every target it supports under `.deps/<wheel file name>/`. A run
unpacks only the wheels of the running target (CPython minor version x architecture), each
into its own directory of the cache (`wheels/<project>-<version>-<hash>/`, shared by every
build carrying the same wheel), makes a small venv for this build and this interpreter
(`envs/<build>-<interpreter>/`: a `python` link, `pyvenv.cfg`, a `.pth` naming those
directories) and execs its `python -sE`: so `sys.executable` is a python that imports the
pyz's code (`collection conformance` starts its harness with it) and nothing of the
system's site-packages or PYTHON* variables leaks in. Both kinds of directory are built
under a temporary name and renamed into place, so concurrent first runs need no lock: the
first rename wins, the others discard their copy.

The warm path (the env exists) imports nothing beyond `os` and `sys` and opens no zip.

Where the cache lives (D-74): COLLECTION_PYZ_ROOT; else PEX_ROOT/collection-pyz (the variable
earlier, pex-based builds read: deployments that set it keep working); else
$XDG_CACHE_HOME/collection-pyz; else $HOME/.cache/collection-pyz when HOME is an existing,
writable directory; else a private per-user directory in the temp dir
($TMPDIR or /tmp)/collection-pyz-<uid>, created 0700 and refused unless it is a real
directory owned by this user that no one else may write. Nothing is ever written under a
HOME that is unset, missing or not writable, and no home is looked up in the password file.
`COLLECTION_PYZ_INTERPRETER=1` runs the remaining arguments with the env's python instead
of the CLI (`-c CODE`, `-m MODULE`, a script), for debugging and for the packaging tests.
"""

import os
import sys

MANIFEST = {}  # replaced by build_zipapp.py: build id, entry point, glibc floor, targets -> wheels

EXIT_BOOT = 70  # EX_SOFTWARE: the pyz could not start (not a usage error of the CLI, which is 2)


def _fail(message):
    sys.stderr.write("collection.pyz: " + message + "\n")
    sys.exit(EXIT_BOOT)


def _target():
    """The running interpreter's target key (`cp311-x86_64`), or a clear refusal."""
    supported = ", ".join(sorted(MANIFEST["targets"]))
    if sys.implementation.name != "cpython" or not sys.platform.startswith("linux"):
        _fail("runs on CPython on Linux only (this is %s on %s); targets: %s"
              % (sys.implementation.name, sys.platform, supported))
    if "t" in getattr(sys, "abiflags", ""):
        _fail("a free-threaded CPython build is not a target; use the regular python3; targets: " + supported)
    key = "cp%d%d-%s" % (sys.version_info[0], sys.version_info[1], os.uname().machine)
    if key not in MANIFEST["targets"]:
        _fail("this file carries no wheels for %s (CPython %d.%d on %s); targets: %s"
              % (key, sys.version_info[0], sys.version_info[1], os.uname().machine, supported))
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        libc = ""
    floor = tuple(MANIFEST["glibc"])
    parts = libc.split()
    try:
        version = tuple(int(p) for p in parts[1].split(".")[:2]) if parts and parts[0] == "glibc" else None
    except (IndexError, ValueError):
        version = None
    if version is None or version < floor:
        _fail("needs glibc %d.%d or newer (found %s); musl-based systems such as Alpine are not targets"
              % (floor[0], floor[1], libc or "no glibc"))
    return key


def _private_tmp():
    base = os.environ.get("TMPDIR") or "/tmp"
    if not os.path.isabs(base) or not os.path.isdir(base):
        base = "/tmp"
    uid = os.getuid()
    path = os.path.join(base, "collection-pyz-%d" % uid)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        _fail("cannot create the cache %s (%s); set COLLECTION_PYZ_ROOT to a writable directory" % (path, exc))
    import stat
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        _fail("refusing the cache %s: not a directory owned by uid %d that only it may use "
              "(owner uid %d, mode %o); remove it or set COLLECTION_PYZ_ROOT"
              % (path, uid, st.st_uid, stat.S_IMODE(st.st_mode)))
    return path


def _usable(path):
    """Whether `path` (to be created if missing) can hold the cache."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def cache_root():
    """The cache directory (D-74); see the module docstring for the order."""
    explicit = os.environ.get("COLLECTION_PYZ_ROOT")
    name = "COLLECTION_PYZ_ROOT"
    if not explicit and os.environ.get("PEX_ROOT"):
        explicit, name = os.path.join(os.environ["PEX_ROOT"], "collection-pyz"), "PEX_ROOT"
    if explicit:
        if not os.path.isabs(explicit):
            _fail("%s must be an absolute path (got %r)" % (name, explicit))
        return explicit
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg) and _usable(os.path.join(xdg, "collection-pyz")):
        return os.path.join(xdg, "collection-pyz")
    home = os.environ.get("HOME")
    if home and os.path.isabs(home) and os.path.isdir(home) and os.access(home, os.W_OK | os.X_OK):
        path = os.path.join(home, ".cache", "collection-pyz")
        if _usable(path):
            return path
    return _private_tmp()


def _safe(rel):
    return rel and not rel.startswith("/") and ".." not in rel.split("/") and "\\" not in rel


def _extract_wheel(zf, root, key, wheel):
    """The wheel's installed files in root/wheels/<key>; built aside and renamed into place."""
    final = os.path.join(root, "wheels", key)
    if os.path.isdir(final):
        return final
    import shutil
    import tempfile
    os.makedirs(os.path.dirname(final), exist_ok=True)
    work = tempfile.mkdtemp(prefix="." + key + ".", dir=os.path.dirname(final))
    os.chmod(work, 0o755)
    prefix = ".deps/" + wheel + "/"
    data_dir = wheel.split("-")[0] + "-" + wheel.split("-")[1] + ".data/"
    try:
        for info in zf.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            rel = info.filename[len(prefix):]
            if rel.startswith(data_dir):
                scheme, _, rest = rel[len(data_dir):].partition("/")
                if scheme not in ("purelib", "platlib"):
                    continue          # scripts, headers, data: nothing the CLI runs
                rel = rest
            if not _safe(rel):
                _fail("%s holds an unsafe path %r" % (wheel, info.filename))
            dest = os.path.join(work, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with zf.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        try:
            os.rename(work, final)
        except OSError:
            if not os.path.isdir(final):
                raise
            shutil.rmtree(work, ignore_errors=True)   # a concurrent first run got there first
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


ENTRY_SCRIPT = """import sys
from {module} import {func}
sys.exit({func}())
"""


def _ensure_env(root, target, python):
    import hashlib
    ident = hashlib.sha256((python + "\0" + sys.version).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    env = os.path.join(root, "envs", MANIFEST["build"][:16] + "-" + ident)
    if os.path.isdir(env):
        return env
    import shutil
    import tempfile
    import zipfile
    pyz = os.path.dirname(os.path.abspath(__file__))
    with zipfile.ZipFile(pyz) as zf:
        dirs = [_extract_wheel(zf, root, key, MANIFEST["wheels"][key]) for key in MANIFEST["targets"][target]]
    os.makedirs(os.path.dirname(env), exist_ok=True)
    work = tempfile.mkdtemp(prefix="." + os.path.basename(env) + ".", dir=os.path.dirname(env))
    os.chmod(work, 0o755)
    try:
        os.mkdir(os.path.join(work, "bin"))
        os.symlink(python, os.path.join(work, "bin", "python"))
        with open(os.path.join(work, "pyvenv.cfg"), "w", encoding="utf-8") as fh:
            fh.write("home = %s\ninclude-system-site-packages = false\nversion = %d.%d.%d\n"
                     % ((os.path.dirname(python),) + tuple(sys.version_info[:3])))
        site = os.path.join(work, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        os.makedirs(site)
        with open(os.path.join(site, "collection-pyz.pth"), "w", encoding="utf-8") as fh:
            fh.write("".join(d + "\n" for d in dirs))
        module, func = MANIFEST["entry"].split(":")
        with open(os.path.join(work, "bin", "collection"), "w", encoding="utf-8") as fh:
            fh.write(ENTRY_SCRIPT.format(module=module, func=func))
        try:
            os.rename(work, env)
        except OSError:
            if not os.path.isdir(env):
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return env


def main():
    target = _target()
    root = cache_root()
    # The interpreter itself, not a venv's link to it: the env gets its own link.
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    try:
        env = _ensure_env(root, target, python)
    except OSError as exc:
        _fail("cannot unpack into the cache %s (%s); set COLLECTION_PYZ_ROOT to a writable directory"
              % (root, exc))
    exe = os.path.join(env, "bin", "python")
    args = sys.argv[1:]
    if os.environ.get("COLLECTION_PYZ_INTERPRETER") == "1":
        argv = [exe, "-sE", *args]
    else:
        argv = [exe, "-sE", os.path.join(env, "bin", "collection"), *args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, argv)


if __name__ == "__main__":
    main()

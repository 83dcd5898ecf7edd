#!/usr/bin/env python3
"""Checks a browser-mcpd LaunchAgent plist: it parses, has the keys launchd needs, and each
key has the type launchd expects (launchd ignores a job whose keys have the wrong type).

usage: check-plist.py FILE...   (the template's @BIN@/@HOME@ stand for absolute paths)
"""
import plistlib
import sys

# key -> (required, check, what it must be)
def is_bool(v):
    return isinstance(v, bool)

def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)

def is_path(v):
    return isinstance(v, str) and (v.startswith("/") or v.startswith("@HOME@/") or v == "@BIN@")

def is_args(v):
    return isinstance(v, list) and len(v) > 0 and all(isinstance(a, str) for a in v) and is_path(v[0])

def is_keepalive(v):
    return is_bool(v) or (isinstance(v, dict) and all(is_bool(x) for x in v.values())
                          and set(v) <= {"SuccessfulExit", "Crashed"})

def is_env(v):
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())

KEYS = {
    "Label": (True, lambda v: v == "dev.browsermcp.browser-mcpd", "the string dev.browsermcp.browser-mcpd"),
    "ProgramArguments": (True, is_args, "a non-empty array of strings starting with an absolute path"),
    "RunAtLoad": (True, is_bool, "a boolean"),
    "KeepAlive": (True, is_keepalive, "a boolean or a dict of SuccessfulExit/Crashed booleans"),
    "StandardOutPath": (True, is_path, "an absolute path"),
    "StandardErrorPath": (True, is_path, "an absolute path"),
    "EnvironmentVariables": (True, is_env, "a dict of strings"),
    "ThrottleInterval": (False, is_int, "an integer"),
    "ExitTimeOut": (False, is_int, "an integer"),
    "ProcessType": (False, lambda v: v in ("Background", "Standard", "Adaptive", "Interactive"), "a known ProcessType"),
}

def check(path):
    with open(path, "rb") as f:
        plist = plistlib.load(f)
    errors = []
    if not isinstance(plist, dict):
        return [f"{path}: the top level is not a dict"]
    for key, (required, ok, what) in KEYS.items():
        if key not in plist:
            if required:
                errors.append(f"{path}: missing {key}")
        elif not ok(plist[key]):
            errors.append(f"{path}: {key} must be {what}, not {plist[key]!r}")
    for key in plist:
        if key not in KEYS:
            errors.append(f"{path}: unexpected key {key}")
    # launchd never rotates StandardErrorPath: the daemon must write a log file it rotates
    # itself, and stderr must not be that same file.
    args = plist.get("ProgramArguments", [])
    if "--log-file" not in args[:-1]:
        errors.append(f"{path}: ProgramArguments must pass --log-file FILE (launchd does not rotate logs)")
    else:
        log = args[args.index("--log-file") + 1]
        if not is_path(log):
            errors.append(f"{path}: --log-file must be an absolute path, not {log!r}")
        if log in (plist.get("StandardErrorPath"), plist.get("StandardOutPath")):
            errors.append(f"{path}: StandardErrorPath/StandardOutPath must not be the rotated log {log}")
    return errors

def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    errors = [e for path in sys.argv[1:] for e in check(path)]
    for e in errors:
        print(e, file=sys.stderr)
    if not errors:
        print(f"plist ok: {', '.join(sys.argv[1:])}")
    return 1 if errors else 0

if __name__ == "__main__":
    sys.exit(main())

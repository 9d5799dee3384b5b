"""make ops: builds the ops function's request from make's variables, and
prints its answer for a person (make inbox-replay's too).

  python3 infra/opsverb/ops.py request       the request (JSON) on stdout
  python3 infra/opsverb/ops.py answer [fn]   reads the answer (JSON) of the
                                             function fn (default ops) on
                                             stdin, prints it, exits 1
                                             unless ok
"""
import json
import os
import sys

# make variable -> request field
FIELDS = {
    "ACTION": "action", "SESSION": "session", "BY": "authorised_by", "REASON": "reason",
    "MODE": "mode", "TIER": "tier", "QUERY": "query", "KIND": "kind", "QUEUE": "queue",
    "FROM": "from", "TO": "to", "DAY": "day", "SHOW": "show", "EMAIL": "email", "TX": "tx",
    "AUTHORISED_BY": "authorised_by",
}
FLAGS = {"REVEAL": "reveal", "FORCE": "force"}


def request():
    req = {field: os.environ[var] for var, field in FIELDS.items() if os.environ.get(var)}
    for var, field in FLAGS.items():
        if os.environ.get(var, "") not in ("", "0", "false"):
            req[field] = True
    if os.environ.get("N"):
        try:
            req["n"] = int(os.environ["N"])
        except ValueError:
            sys.exit("make ops: N is a whole number, e.g. N=5")
    if "action" not in req:
        sys.exit("make ops needs ACTION=list|show|deliver|rerun|refund|resend|redrive|report|seal|verify-seal|inbox|x402-confirm|x402-void|chat|chat-grant|chat-refund|chat-erase")
    json.dump(req, sys.stdout)


def answer(fn="ops"):
    raw = sys.stdin.read().strip()
    try:
        ans = json.loads(raw.splitlines()[-1])
    except (ValueError, IndexError):
        sys.exit("the " + fn + " function gave no answer:\n" + raw)
    if "errorMessage" in ans:
        sys.exit("the " + fn + " function failed: " + ans["errorMessage"])
    print(("" if ans.get("ok") else "REFUSED: ") + ans.get("message", ""))
    if ans.get("text"):
        print(ans["text"].rstrip("\n"))
    sys.exit(0 if ans.get("ok") else 1)


if __name__ == "__main__":
    {"request": request, "answer": answer}[sys.argv[1]](*sys.argv[2:3])

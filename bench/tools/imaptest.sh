#!/usr/bin/env bash
# imaptest (Dovecot's IMAP compliance suite) against a fresh Mailroom sandbox: starts `mailroom serve --sandbox` on a
# temporary SQLite database, makes a workspace, a mailbox and an app password (CLI and API, as the README does), runs
# each scripted test (`imaptest test=FILE`) on its own and prints one line per test: name, pass/FAIL/skip, and the
# first thing imaptest said went wrong. CI does not run it; docs/imap-compliance.md keeps the latest results.
#
# A mailbox's folders are fixed, so imaptest cannot create its own `imaptest` folder: each test runs in INBOX
# (`box=INBOX`, for which imaptest itself skips CREATE), emptied first through the HTTP API as a user would, so that
# every test starts from the messages its script appends.
#
#   bench/tools/imaptest.sh IMAPTEST TESTS_DIR [RESULTS_FILE]
#
# IMAPTEST is an imaptest binary (built from its own source against dovecot-dev 2.3; this script does not build it),
# TESTS_DIR its src/tests. dist/ must be built (npx tsc -p tsconfig.build.json). Ports: IMAPTEST_IMAP_PORT (1143),
# IMAPTEST_HTTP_PORT (18080); SMTP and submission take free ports. Each test gets IMAPTEST_TIMEOUT seconds (60).
# IMAPTEST_LOGS, a directory, keeps everything imaptest printed for each test (NAME.log).
set -euo pipefail

imaptest=${1:?usage: bench/tools/imaptest.sh IMAPTEST TESTS_DIR [RESULTS_FILE]}
tests=${2:?usage: bench/tools/imaptest.sh IMAPTEST TESTS_DIR [RESULTS_FILE]}
results=${3:-/dev/stdout}
imap_port=${IMAPTEST_IMAP_PORT:-1143}
http_port=${IMAPTEST_HTTP_PORT:-18080}
limit=${IMAPTEST_TIMEOUT:-60}
logs=${IMAPTEST_LOGS:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
server_pid=

cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

export MAILROOM_DATABASE_URL="sqlite:$work/mailroom.db"
export MAILROOM_HTTP_PORT=$http_port MAILROOM_SMTP_PORT=0 MAILROOM_SUBMISSION_PORT=0 MAILROOM_IMAP_PORT=$imap_port
export MAILROOM_ALLOW_PLAINTEXT_AUTH=loopback MAILROOM_LOG_LEVEL=warn XDG_CONFIG_HOME="$work/config"
# imaptest links Dovecot's libdovecot, which Debian keeps out of the linker's path.
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/lib/dovecot"
api="http://127.0.0.1:$http_port"
json() { node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }

node "$root/bin/mailroom.js" serve --sandbox >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  curl -sf "$api/health" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.2
done

user=imaptest@mailroom.localhost
owner_password='imaptest-owner-pass'
api_key=$(node "$root/bin/mailroom.js" admin bootstrap --email owner@imaptest.example --password "$owner_password" --workspace Imaptest --json | json api_key)
curl -sf -X POST "$api/mailboxes?address=$user" -H "Authorization: Bearer $api_key" >/dev/null
session=$(curl -sf -X POST "$api/app/api/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"owner@imaptest.example\",\"password\":\"$owner_password\"}" | json session_token)
pass=$(curl -sf -X POST "$api/app/api/app-passwords" -H "X-Service-Session: $session" -H 'Content-Type: application/json' \
  -d "{\"name\":\"imaptest\",\"mailbox\":\"$user\"}" | json password)

# Deletes every message of the mailbox (all folders) through the API, a page at a time.
empty_mailbox() {
  local folder ids
  for folder in inbox archive sent spam trash; do
    while :; do
      ids=$(curl -sf "$api/inbox?mailbox=$user&folder=$folder&limit=500" -H "Authorization: Bearer $api_key" |
        node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>console.log(JSON.parse(s).messages.map((m)=>m.message_id).join(" ")))')
      [ -n "$ids" ] || break
      for id in $ids; do curl -sf -X DELETE "$api/messages/$id" -H "Authorization: Bearer $api_key" >/dev/null; done
    done
  done
}

# imaptest counts a test it skips for a missing capability as neither failed nor skipped: read its header instead.
caps=" $(python3 -c 'import imaplib,sys; m=imaplib.IMAP4("127.0.0.1",int(sys.argv[1])); m.login(sys.argv[2],sys.argv[3]); print(" ".join(m.capabilities)); m.logout()' "$imap_port" "$user" "$pass") "
missing() {
  local want
  for want in $(sed -n 's/^capabilities:[[:space:]]*//Ip' "$1" | head -n1); do
    case "$caps" in *" ${want^^} "*) ;; *) echo "$want"; return ;; esac
  done
}

passed=0 failed=0 skipped=0
{
  for file in "$tests"/*; do
    name=$(basename "$file")
    case "$name" in *.mbox | Makefile* | *.am | *.in) continue ;; esac
    [ -f "$file" ] || continue
    lacking=$(missing "$file")
    if [ -n "$lacking" ]; then skipped=$((skipped + 1)); echo "$name skip (no $lacking)"; continue; fi
    empty_mailbox
    out=$(cd "$tests" && timeout "$limit" "$imaptest" host=127.0.0.1 port="$imap_port" user="$user" pass="$pass" box=INBOX test="$file" 2>&1) || true
    [ -z "$logs" ] || printf '%s\n' "$out" >"$logs/$name.log"
    summary=$(printf '%s\n' "$out" | grep -aE '^[0-9]+ test groups:' | tail -n1 || true)
    if printf '%s' "$summary" | grep -qE ': 0 failed, 1 skipped'; then
      skipped=$((skipped + 1)); echo "$name skip (missing capability)"
    elif printf '%s' "$summary" | grep -qE ': 0 failed, 0 skipped'; then
      passed=$((passed + 1)); echo "$name pass"
    else
      failed=$((failed + 1))
      reason=$(printf '%s\n' "$out" | grep -avE '^([0-9]+ test groups:|base protocol:|extensions:)' | grep -am1 -E '\S' | cut -c1-200 || true)
      echo "$name FAIL ${reason:-no summary (timed out after ${limit}s)}"
    fi
  done
  echo "passed $passed, failed $failed, skipped $skipped"
} | tee "$results"

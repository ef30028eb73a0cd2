#!/usr/bin/env bash
# Run the book build under an overall time limit, keeping its log; when it fails or runs out of time, say
# which chapter was being executed, so a hung kernel costs LIMIT seconds of CI and names itself.
#
#   scripts/book_build_guard.sh LIMIT_SECONDS LOG_FILE COMMAND...
#   scripts/book_build_guard.sh 1500 book/_build/build.log .venv/bin/jupyter-book build -W -n --keep-going book/
#
# The exit status is COMMAND's (124 when it ran out of time). Sphinx logs "reading sources... [ 30%] DOC" before
# each document and myst-nb "Executing notebook ..." / "Executed notebook in ..." around its execution; Sphinx run
# from jupyter-book ends those status lines with a carriage return and colours them, hence the tr and sed.
#
# Why a build could hang (issue 25): chapter 3's widget panel, run by nbclient, makes nbclient answer each output of
# the panel's Output widget with a comm message on the shell channel while the cell runs; nbclient could then miss
# the cell's reply and wait out the whole cell timeout on an idle kernel (1 to 3 panels in 100), and ipykernel 7
# before ipython/ipykernel PR 1529 (first released in 7.4) could leave the next request unread for good. So the
# panel is tagged skip-execution, pyproject excludes ipykernel 7.0-7.3, execute.timeout is 300 s, and this guard
# bounds the whole build.
set -uo pipefail
if [ $# -lt 3 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 LIMIT_SECONDS LOG_FILE COMMAND... (LIMIT_SECONDS a whole number of seconds, at least 1)" >&2
    exit 2
fi
limit=$1 log=$2
shift 2
mkdir -p "$(dirname "$log")"

# timeout signals the command's whole process group (the kernel too); SIGKILL 60 s later if it ignores SIGTERM
timeout --kill-after=60 "$limit" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && exit 0

lines=$(tr '\r' '\n' < "$log" | sed 's/\x1b\[[0-9;]*m//g')
chapter=$(sed -n 's/^reading sources\.\.\. \[ *[0-9]*%\] *//p' <<< "$lines" | tail -n 1 | sed 's/ *$//')
# the last document read started executing and never logged that it finished: it is the one that hung or failed
after_last_read=$(awk '/^reading sources\.\.\./ {s = ""} /Executing notebook/ {s = "executing"} /Executed notebook/ {s = ""} END {print s}' <<< "$lines")
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    what="ran out of its ${limit} s limit (exit $status)"
else
    what="failed (exit $status)"
fi
if [ -n "$chapter" ] && [ "$after_last_read" = executing ]; then
    echo "== book build $what while executing chapter ${chapter}; log: $log" >&2
elif [ -n "$chapter" ]; then
    echo "== book build $what; no chapter was executing, the last one read was ${chapter}; log: $log" >&2
else
    echo "== book build $what before reading any chapter; log: $log" >&2
fi
exit "$status"

#!/bin/sh
# `make demo`: the product in a few minutes, in a throwaway project under .memrouter/demo (the example
# memories, committed to git): save, search with why, the session context, connecting an agent.
# $1 is the memrouter command to run (the demo venv's, which holds the runtime dependencies alone).
set -eu
memrouter=$1
demo=.memrouter/demo
rm -rf "$demo"
mkdir -p "$demo/project/.serena"
cp -R examples/memories "$demo/project/.serena/memories"
cd "$demo/project"
git init -q .
git -c user.name=Demo -c user.email=demo@example.com add -A
git -c user.name=Demo -c user.email=demo@example.com commit -q -m "the project's memories"
git config user.name "You"
git config user.email "you@example.com"

step() { printf '\n$ memrouter %s\n' "$*"; }

step save decisions/code-review --kind decision --content '"# Code review ..."'
"$memrouter" save decisions/code-review --kind decision \
    --content "# Code review

Every pull request needs one approval from the owning team; the author merges with squash."

step search '"why did we choose a relational database"' --limit 3
"$memrouter" search "why did we choose a relational database" --limit 3

step search '"who approves a pull request"' --limit 1 --format json
"$memrouter" search "who approves a pull request" --limit 1 --format json

step search '"what colour is the office cat"'
"$memrouter" search "what colour is the office cat"

step context --max-tokens 600
"$memrouter" context --max-tokens 600

step status
"$memrouter" status

cat <<TEXT

Connect an agent, from your own project's folder:
  memrouter init --client claude-code    # writes .mcp.json, a SessionStart hook and a CLAUDE.md note
  (--client codex, cursor or vscode for the others; docs/agents.md tells what each gets)
Browse and write memories in a browser:
  memrouter ui
The demo project stays in $demo/project; try it there:
  cd $demo/project && $memrouter ui
TEXT

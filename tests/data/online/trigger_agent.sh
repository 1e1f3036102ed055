#!/bin/sh
# Loads a skill when a word of five letters or more of its description is in the task. On an
# odd seed, with the argument "slip" it loads nothing, as a noisy model misses a skill it would
# load on another run; with "crash" it exits 3 before writing anything.
if [ "$1" = crash ] && [ $((SKILLSMITH_SEED % 2)) -eq 1 ]; then
  exit 3
fi
prompt=$(cat "$SKILLSMITH_PROMPT_FILE")
printf '{"type": "user", "content": "task"}\n'
if [ "$1" = slip ] && [ $((SKILLSMITH_SEED % 2)) -eq 1 ]; then
  printf '{"type": "assistant", "content": "no skill needed"}\n'
  exit 0
fi
for f in "$SKILLSMITH_SKILLS_DIR"/*/SKILL.md; do
  name=$(basename "$(dirname "$f")")
  desc=$(sed -n 's/^description: //p' "$f")
  for w in $desc; do
    case "$w" in
      ?????*)
        if printf '%s' "$prompt" | grep -qiw -- "$w"; then
          printf '{"type": "assistant", "content": "loading", "tool_calls": [{"id": "t1", "name": "Skill", "args": "%s"}]}\n' "$name"
          printf '{"type": "tool", "tool_name": "Skill", "tool_call_id": "t1", "result": "ok"}\n'
          printf '{"type": "assistant", "content": "used %s"}\n' "$name"
          exit 0
        fi;;
    esac
  done
done
printf '{"type": "assistant", "content": "no skill needed"}\n'

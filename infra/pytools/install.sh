#!/usr/bin/env bash
# Makes Python tools importable by the python3 that make's PATH finds.
#
#   install.sh VENV MODULE=SPEC...    e.g. install.sh .build/venv moto=moto[server]==5.2.1
#
# A machine whose python3 already imports a module keeps it. Whatever is
# missing goes into a project-local virtual environment (VENV, whose bin make
# puts first on PATH): a modern Debian refuses pip installs into the system's
# Python. Where no Python package index answers, it says in one line what to
# install and how, and leaves no half-made environment behind (a venv without
# the tools would shadow a system python3 that gets them later).
set -euo pipefail
venv=$1
shift
missing=()
for pair in "$@"; do
	python3 -c "import ${pair%%=*}" 2>/dev/null || missing+=("${pair#*=}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

log=$(dirname "$venv")/pip.log
mkdir -p "$(dirname "$venv")"
made=
if [ ! -x "$venv/bin/python3" ]; then
	if ! python3 -m venv "$venv" >"$log" 2>&1; then
		# Debian ships venv's pip bootstrap apart from python3.
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			{ apt-get update -qq && apt-get install -y -qq python3-venv; } >>"$log" 2>&1 || true
		fi
		rm -rf "$venv"
		python3 -m venv "$venv" >>"$log" 2>&1 || {
			echo "make: python3 cannot make a virtual environment; install Debian's python3-venv (apt-get install python3-venv) and run make again"
			rm -rf "$venv"
			exit 1
		}
	fi
	made=1
fi
if ! "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 20 "${missing[@]}" >>"$log" 2>&1; then
	[ -n "$made" ] && rm -rf "$venv"
	echo "make: $(printf "'%s' " "${missing[@]}")needed, and no Python package index answered (pip's log: $log): install with python3 -m pip install $(printf "'%s' " "${missing[@]}")then run make again"
	exit 1
fi

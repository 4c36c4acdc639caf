# Sourced by scripts/fetch-corpus.sh and scripts/fetch-root.sh: a private apt configuration for
# Debian sid (its own sources.list, package lists and archive cache under the user's cache
# directory), so that nothing of this machine's apt state is read or changed and nothing is
# installed.
#
# Sets:
#   corpus     the corpus cache (ROCPACK_CORPUS, default ~/.cache/rocpack-corpus)
#   apt_dir    the private apt state (ROCPACK_APT_DIR, default ~/.cache/rocpack-apt)
#              (with ROCPACK_APT_DEB_SRC=1, also the deb-src line: give it its own ROCPACK_APT_DIR)
#   O          the apt-get/apt-cache options that select it, as an array: apt-get "${O[@]}" ...
# Defines:
#   apt_refresh NAME   refreshes the private package lists at most once a day; when the mirror
#                      cannot be reached it goes on with lists from an earlier update, or, with
#                      none, prints "NAME: cannot reach the Debian mirror" and exits with status
#                      3, the convention every fetch script follows for "network needed".
#   apt_version PKG    prints the candidate version of PKG in sid (empty if there is none).
#   apt_lock           serialises the caller with any other fetch script (flock on the apt
#                      directory) until it exits; apt-get's own lock would otherwise make a
#                      concurrent update fail and look like a network failure.

corpus=${ROCPACK_CORPUS:-$HOME/.cache/rocpack-corpus}
apt_dir=${ROCPACK_APT_DIR:-$HOME/.cache/rocpack-apt}
mkdir -p "$corpus" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
# ROCPACK_APT_DEB_SRC=1 adds a deb-src line (scripts/derive-facts.sh reads source packages). It
# comes with its own ROCPACK_APT_DIR: a caller without it would rewrite the list and drop the
# Sources index at its next update.
if [ -n "${ROCPACK_APT_DEB_SRC:-}" ]; then
  printf '%s\n' \
    "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
    "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
    > "$apt_dir/sources.list"
else
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
    > "$apt_dir/sources.list"
fi
# The Sandbox::User setting lets apt-get download as root without a "_apt" user owning the
# private directories.
O=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
   -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
   -o APT::Sandbox::User=root)

apt_lock() {
  exec {apt_lock_fd}> "$apt_dir/.rocpack-lock"
  flock "$apt_lock_fd"
}

apt_refresh() {
  local stamp="$apt_dir/lists/.rocpack-updated"
  if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ] ||
     { [ -n "${ROCPACK_APT_DEB_SRC:-}" ] && ! compgen -G "$apt_dir/lists/*_Sources*" > /dev/null; }; then
    # --error-on=any: without it apt-get update exits 0 when the mirror cannot be reached
    # ("W: Failed to fetch ... Some index files failed to download").
    if apt-get "${O[@]}" -qq --error-on=any update >&2; then
      touch "$stamp"
    elif compgen -G "$apt_dir/lists/*_Packages*" > /dev/null; then
      # Lists from an earlier update: what is cached can still be used offline.
      echo "$1: cannot reach the Debian mirror; using the package lists of $(date -r "$stamp" +%F 2>/dev/null || echo 'an earlier update')" >&2
    else
      echo "$1: cannot reach the Debian mirror (apt-get update failed)" >&2
      exit 3
    fi
  fi
}

apt_version() {
  # apt-cache fails (status 100) for an unknown name; that is an empty answer, not an error.
  { apt-cache "${O[@]}" show --no-all-versions "$1" 2>/dev/null || true; } |
    awk '/^Version:/ { print $2; exit }'
}

# The version of a source package (needs ROCPACK_APT_DEB_SRC=1 before sourcing this file).
apt_source_version() {
  { apt-cache "${O[@]}" showsrc --only-source "$1" 2>/dev/null || true; } |
    awk '/^Version:/ { print $2; exit }'
}

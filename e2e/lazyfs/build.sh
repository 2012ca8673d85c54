#!/usr/bin/env bash
# Build LazyFS (dsrhaslab/lazyfs @ a47a5ba, MIT) offline on Debian 12, for
# the power-cut tests of the e2e module (powercut_test.go).
#
#   build.sh [OUTDIR]          (default OUTDIR: $HOME/.cache/lazyfs)
#
# Needs only Debian's apt repositories: the upstream CMake files fetch toml11,
# spdlog and googletest from GitHub (FetchContent); they are replaced here by
# Debian's libtoml11-dev / libspdlog-dev (find_package), and tests are off.
# Two source changes: the fault FIFO is read in chunks of 100 bytes, and a
# longer command (a torn-write fault naming a file under a temporary
# directory) was cut short and registered on the wrong name; the chunk is
# 4096 bytes here. And lfs_truncate could return a stale errno from an
# uninitialised result (see "patch source").
#
# Result:
#   OUTDIR/bin/lazyfs            the FUSE binary (RUNPATH $ORIGIN/../lib)
#   OUTDIR/lib/libpcache.so*     its cache library
#   OUTDIR/bin/lazyfs-run        wrapper (sets LD_LIBRARY_PATH, execs lazyfs)
#   OUTDIR/config/default.toml   upstream default config
#   OUTDIR/src                   unpacked + patched source, OUTDIR/build the cmake tree
#
# Then: ROCKETSTORE_LAZYFS=OUTDIR go test -run PowerCut ./... (in e2e/).
#
# Idempotent: re-running with the same tarball and script keeps the last
# build; otherwise it unpacks the source again and rebuilds.  Set LAZYFS_SKIP_APT=1 to skip apt-get
# (it is also skipped when every package is already installed); set
# LAZYFS_APT_ONLY=1 to install the packages and stop.
set -Eeuo pipefail

die() { echo "build.sh: ERROR: $*" >&2; exit 1; }
trap 'die "command failed (line $LINENO): $BASH_COMMAND"' ERR

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:-${HOME:-/root}/.cache/lazyfs}
mkdir -p "$OUT" || die "cannot create OUTDIR $OUT"
OUT=$(cd "$OUT" && pwd)
TARBALL="$HERE/lazyfs-a47a5ba.tar.gz"
TARBALL_SHA256=49c6c747f654f155c6f374e88fe8ff401f31a229bace1a3c54ec32017fd4ea6a
[ -f "$TARBALL" ] || die "source tarball not found beside the script: $TARBALL"
[ "$(sha256sum "$TARBALL" | cut -d' ' -f1)" = "$TARBALL_SHA256" ] || die "$TARBALL is not the pinned upstream source"

PKGS=(g++ cmake make pkg-config libfuse3-dev fuse3 libspdlog-dev libfmt-dev libtoml11-dev)

# ---------------------------------------------------------------- packages
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ] && [ "${LAZYFS_SKIP_APT:-0}" != 1 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || die "not root and no sudo: install ${missing[*]} first"
        SUDO=sudo
    fi
    echo "build.sh: installing ${missing[*]} with apt-get"
    $SUDO apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${PKGS[@]}" \
        || die "apt-get install failed (${PKGS[*]})"
elif [ "${#missing[@]}" -gt 0 ]; then
    die "LAZYFS_SKIP_APT=1 but packages are missing: ${missing[*]}"
else
    echo "build.sh: all packages already installed (${PKGS[*]})"
fi

if [ "${LAZYFS_APT_ONLY:-0}" = 1 ]; then
    exit 0
fi

# FUSE's allow_other needs user_allow_other for non-root users; harmless for root.
if [ -w /etc/fuse.conf ] && ! grep -q '^[[:space:]]*user_allow_other' /etc/fuse.conf; then
    echo "user_allow_other" >> /etc/fuse.conf
fi

# ---------------------------------------------------------------- cache
# The build is a function of the tarball and of this script (its patches):
# when both are what the last build used, that build stands. Unpacking
# again would give the patched files new mtimes and recompile them.
SUM="$TARBALL_SHA256 $(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"
if [ "$(cat "$OUT/.tarball.sha256" 2>/dev/null)" = "$SUM" ] && [ -x "$OUT/bin/lazyfs" ] && [ -x "$OUT/bin/lazyfs-run" ] \
    && ! ldd "$OUT/bin/lazyfs" | grep -q 'not found'; then
    echo "build.sh: OK (cached): $OUT/bin/lazyfs"
    exit 0
fi

# ---------------------------------------------------------------- source
SRC="$OUT/src"
rm -rf "$SRC"
mkdir -p "$SRC"
tar -xzf "$TARBALL" -C "$SRC" --strip-components=1 || die "cannot unpack $TARBALL"
[ -f "$SRC/libs/libpcache/CMakeLists.txt" ] && [ -f "$SRC/lazyfs/CMakeLists.txt" ] \
    || die "unexpected tarball layout"
grep -q FetchContent "$SRC/libs/libpcache/CMakeLists.txt" \
    || die "libpcache CMakeLists.txt is not the expected upstream one"

# ---------------------------------------------------------------- patch source
grep -q '^#define MAX_READ_CHUNK 100$' "$SRC/lazyfs/src/main.cpp" || die "main.cpp: MAX_READ_CHUNK is not the expected 100"
sed -i 's/^#define MAX_READ_CHUNK 100$/#define MAX_READ_CHUNK 4096/' "$SRC/lazyfs/src/main.cpp"
# lfs_truncate returns -errno when its local res is -1, but on the path
# where the file's content is cached and grows (ftruncate to a larger size,
# which is how a new segment is sized when fallocate is not supported) res
# is never assigned: the answer depends on stack garbage, and an ftruncate
# that worked failed now and then with a stale errno (ENOENT).
awk '/^int LazyFS::lfs_truncate \(/ {f=1} f && $0 == "    int res;" {$0="    int res = 0;"; f=0; n++} {print} END {exit n != 1}' \
    "$SRC/lazyfs/src/lazyfs.cpp" > "$SRC/lazyfs/src/lazyfs.cpp.new" || die "lazyfs.cpp: lfs_truncate's res is not the expected uninitialised int"
mv "$SRC/lazyfs/src/lazyfs.cpp.new" "$SRC/lazyfs/src/lazyfs.cpp"

# ---------------------------------------------------------------- patch CMake
# Top-level project that builds both parts; no network, rpath to ../lib.
cat > "$SRC/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(lazyfs VERSION 0.0.1 LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(FETCHCONTENT_FULLY_DISCONNECTED ON)
set(CMAKE_INSTALL_RPATH "$ORIGIN/../lib")
set(CMAKE_BUILD_WITH_INSTALL_RPATH OFF)
add_subdirectory(libs/libpcache)
add_subdirectory(lazyfs)
EOF

# libpcache: FetchContent(toml11, spdlog) -> Debian packages.
cat > "$SRC/libs/libpcache/CMakeLists.txt" <<'EOF'
# Patched by build.sh: Debian's toml11 and spdlog instead of FetchContent.
cmake_minimum_required(VERSION 3.13)
find_package(toml11 REQUIRED)
find_package(spdlog REQUIRED)

add_library(pcache SHARED "")
target_compile_options(pcache PRIVATE -Wall -Wextra)
set_target_properties(pcache PROPERTIES VERSION 0 SOVERSION 0)
target_include_directories(pcache PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_sources(pcache PRIVATE
    src/engine/backends/custom/custom_cache.cpp
    src/engine/page/block_offsets.cpp
    src/engine/page/page.cpp
    src/cache.cpp
    src/item/metadata.cpp
    src/item/block_info.cpp
    src/item/data.cpp
    src/item/item.cpp
    src/config/config.cpp
    src/faults.cpp
)
target_link_libraries(pcache PUBLIC toml11::toml11 spdlog::spdlog)
install(TARGETS pcache LIBRARY DESTINATION lib)
EOF

# lazyfs: drop the link/include dirs into libpcache's FetchContent tree and the
# googletest FetchContent (tests off); link the pcache target + fuse3.
cat > "$SRC/lazyfs/CMakeLists.txt" <<'EOF'
# Patched by build.sh: no FetchContent, no tests.
cmake_minimum_required(VERSION 3.13)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(FUSE3 REQUIRED IMPORTED_TARGET fuse3)

add_executable(lazyfs
    include/lazyfs/fusepp/Fuse.cpp
    src/lazyfs.cpp
    src/main.cpp
)
target_include_directories(lazyfs PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_link_libraries(lazyfs PRIVATE pcache PkgConfig::FUSE3 Threads::Threads)
install(TARGETS lazyfs RUNTIME DESTINATION bin)
install(FILES config/default.toml DESTINATION config)
EOF
if grep -rq 'FetchContent_Declare\|GIT_REPOSITORY\|https://' "$SRC/CMakeLists.txt" "$SRC/libs/libpcache/CMakeLists.txt" "$SRC/lazyfs/CMakeLists.txt"; then
    die "patched CMake files still reference the network"
fi

# ---------------------------------------------------------------- build
BUILD="$OUT/build"
JOBS=$(nproc 2>/dev/null || echo 2)
# Unpacked sources keep the archive's mtimes: if the tarball or a patch
# changed, start the build tree afresh so make cannot mistake old objects
# for up to date.
if [ "$(cat "$OUT/.tarball.sha256" 2>/dev/null)" != "$SUM" ]; then rm -rf "$BUILD"; fi
cmake -S "$SRC" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O2 -g" \
    -DLAZYFS_BUILD_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX="$OUT" >"$OUT/cmake-configure.log" 2>&1 \
    || { tail -30 "$OUT/cmake-configure.log" >&2; die "cmake configure failed (log: $OUT/cmake-configure.log)"; }
cmake --build "$BUILD" -j "$JOBS" >"$OUT/cmake-build.log" 2>&1 \
    || { tail -40 "$OUT/cmake-build.log" >&2; die "compile failed (log: $OUT/cmake-build.log)"; }
cmake --install "$BUILD" >"$OUT/cmake-install.log" 2>&1 \
    || { tail -20 "$OUT/cmake-install.log" >&2; die "install failed (log: $OUT/cmake-install.log)"; }

echo "$SUM" > "$OUT/.tarball.sha256"

# Wrapper: belt and braces next to the RUNPATH.
cat > "$OUT/bin/lazyfs-run" <<EOF
#!/bin/sh
# Runs LazyFS with its libpcache found (generated by build.sh).
LD_LIBRARY_PATH="$OUT/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$OUT/bin/lazyfs" "\$@"
EOF
chmod +x "$OUT/bin/lazyfs-run"

# ---------------------------------------------------------------- check
[ -x "$OUT/bin/lazyfs" ] || die "binary missing: $OUT/bin/lazyfs"
if ldd "$OUT/bin/lazyfs" | grep -q 'not found'; then
    ldd "$OUT/bin/lazyfs" >&2
    die "unresolved shared libraries for $OUT/bin/lazyfs"
fi
echo "build.sh: OK: $OUT/bin/lazyfs (libpcache in $OUT/lib; wrapper $OUT/bin/lazyfs-run)"

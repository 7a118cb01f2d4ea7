# Shared by scripts/run.sh and scripts/test.sh: install what is missing with apt, then configure and build.
# Idempotent: installed packages are not reinstalled, an existing build/ is reused incrementally.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$repo_root/build"

say() { printf '==> %s\n' "$*"; }

# Debian packages the build needs (see README "Dependencies"): compiler and build tools, GoogleTest,
# SimGrid 3.32, yaml-cpp 0.7, Boost.Graph 1.74, zlib (Kineto .json.gz traces), protobuf + protoc (Chakra
# execution traces); GNU time for scripts/bench.sh; gnuplot for `gputwin sweep --plot`; the Python headers and
# pybind11 for the Python module (python/), pytest, matplotlib and NumPy for its tests and example. CUDA is
# optional and never installed here.
required_packages=(g++ cmake make pkg-config libgtest-dev libgmock-dev libsimgrid-dev libyaml-cpp-dev
                   libboost-graph-dev zlib1g-dev libprotobuf-dev protobuf-compiler time
                   gnuplot-nox python3-dev python3-pybind11 python3-pytest python3-matplotlib python3-numpy)

# Installs those of the Debian packages named that are missing, with apt-get; says so when all are there.
install_packages_if_missing() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    if [ $# -le 4 ]; then say "dependencies: $* already installed"; else say "dependencies: all $# Debian packages already installed"; fi
    return
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  say "dependencies: installing ${missing[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

install_missing_packages() {
  install_packages_if_missing "${required_packages[@]}"
}

configure_and_build() {
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  say "configure: cmake -S $repo_root -B $build_dir -DCMAKE_BUILD_TYPE=Release"
  cmake -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
  say "build: cmake --build $build_dir -j $jobs"
  cmake --build "$build_dir" -j "$jobs"
}

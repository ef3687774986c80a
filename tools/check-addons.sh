#!/usr/bin/env bash
# Checks the prebuilt Node addons without trusting the build that made them: for each one, read
# back from the file itself (LLVM's object tools, which read ELF, Mach-O and PE alike),
#   - the format and CPU its platform package promises (an arm64 file in the x64 package fails);
#   - that it exports napi_register_module_v1, the symbol Node calls when it loads an addon;
#   - that it needs nothing beyond Node-API, the C library and the system libraries the platform
#     guarantees: glibc builds use no symbol version newer than GLIBC_2.17 (the stated minimum),
#     musl builds need only musl's libc.so, macOS builds bind only to libSystem and system
#     frameworks, Windows builds import only system DLLs (no MinGW runtime DLL such as
#     libgcc_s_seh-1.dll or libwinpthread-1.dll, which a Windows machine does not have);
#   - macOS builds are named `@rpath/…` (LC_ID_DYLIB), not by the build machine's path;
#   - its size, between 1 MiB (a truncated or empty build) and MAX_ADDON_BYTES (default 40 MiB).
#
#   tools/check-addons.sh                       # every addon present in examples/pi-extension/npm/*/
#   tools/check-addons.sh --all                 # ... and fails when one of the seven is missing
#   tools/check-addons.sh linux-arm64-gnu=/tmp/x.node   # one file, checked as that platform's addon
#
# Prints one line per addon (`ok` or `FAIL` with the reasons) and ends with `N passed, M failed`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npm_dir="$root/examples/pi-extension/npm"
max_bytes=${MAX_ADDON_BYTES:-41943040}
min_bytes=1048576
glibc_max=2.17
all=(linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl darwin-x64 darwin-arm64 win32-x64-gnu)

if ! command -v llvm-readobj >/dev/null 2>&1; then
  command -v rustup >/dev/null 2>&1 && { rustup component list --installed | grep -q '^llvm-tools' || rustup component add llvm-tools >&2; }
  PATH="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin:$PATH"
fi
command -v llvm-readobj >/dev/null 2>&1 || { echo "check-addons.sh: needs llvm-readobj and llvm-nm (rustup component add llvm-tools)" >&2; exit 2; }

require_all=""
pairs=()
for arg in "$@"; do
  case "$arg" in
    --all) require_all=1 ;;
    *=*) pairs+=("$arg") ;;
    *) echo "check-addons.sh: expected --all or TRIPLE=FILE, not $arg" >&2; exit 2 ;;
  esac
done
if [ "${#pairs[@]}" -eq 0 ]; then
  for triple in "${all[@]}"; do
    file="$npm_dir/$triple/cursor-pi-adapter.$triple.node"
    if [ -f "$file" ]; then
      pairs+=("$triple=$file")
    elif [ -n "$require_all" ]; then
      pairs+=("$triple=$file")
    fi
  done
  [ "${#pairs[@]}" -gt 0 ] || { echo "check-addons.sh: no addon in $npm_dir/*/ (run tools/build-addons.sh)" >&2; exit 1; }
fi

problems=""
problem() { problems="$problems; $*"; }
# symbol_problem: like problem, but only the first five per addon are spelled out.
symbol_problems=0
symbol_problem() {
  symbol_problems=$((symbol_problems + 1))
  [ "$symbol_problems" -gt 5 ] || problem "$*"
}

# format_of <llvm-readobj headers>: the format LLVM saw.
format_of() { sed -n 's/^Format: //p' <<<"$1"; }

# version_le A B: true when dotted version A <= B.
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }

check_elf() {
  local file=$1 machine=$2 libc=$3
  local headers needed undefined
  headers=$(llvm-readobj --file-headers "$file")
  grep -q '^Format: elf64' <<<"$headers" || { problem "not a 64-bit ELF file ($(format_of "$headers"))"; return; }
  grep -q 'Type: SharedObject' <<<"$headers" || problem "not an ELF shared object"
  grep -q "Machine: $machine " <<<"$headers" || problem "machine is $(sed -n 's/^ *Machine: //p' <<<"$headers"), not $machine"
  llvm-nm -D --defined-only "$file" | grep -Eq ' T napi_register_module_v1$' ||
    problem "does not export napi_register_module_v1"
  needed=$(llvm-readobj --needed-libs "$file" | sed -n '/NeededLibraries \[/,/\]/p' | sed '1d;$d' | tr -d ' ')
  local allowed
  if [ "$libc" = gnu ]; then
    allowed='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12])$'
  else
    # musl's one library; Alpine names the file ld-musl-<arch>.so.1 and gives it the soname libc.so.
    allowed='^(libc\.so|libc\.musl-(x86_64|aarch64)\.so\.1|ld-musl-(x86_64|aarch64)\.so\.1)$'
  fi
  local lib
  for lib in $needed; do
    grep -Eq "$allowed" <<<"$lib" || problem "needs $lib, which a $libc Linux does not guarantee"
  done
  # Undefined symbols: strong ones must come from the C library (glibc: a GLIBC_ version no newer
  # than the minimum) or be Node-API, which the Node process itself provides.
  undefined=$(llvm-nm -D --undefined-only "$file")
  local kind name version
  while read -r kind name; do
    [ -n "$kind" ] || continue
    case "$kind" in w | v) continue ;; esac
    version=""
    case "$name" in *@*) version=${name#*@} name=${name%%@*} version=${version#@} ;; esac
    case "$name" in napi_* | node_api_*) continue ;; esac
    if [ "$libc" = gnu ]; then
      case "$version" in
        GLIBC_*)
          version_le "${version#GLIBC_}" "$glibc_max" || symbol_problem "$name needs $version, newer than the minimum GLIBC_$glibc_max"
          ;;
        GCC_*) ;;
        "") symbol_problem "$name is undefined and comes from no versioned system library" ;;
        *) symbol_problem "$name@$version comes from outside glibc" ;;
      esac
    else
      case "$version" in
        "") ;;
        *) symbol_problem "$name@$version is a versioned symbol: musl has none (a glibc build?)" ;;
      esac
    fi
  done <<<"$undefined"
}

check_macho() {
  local file=$1 cpu=$2
  local headers
  headers=$(llvm-readobj --file-headers "$file")
  grep -q 'Magic: Magic64' <<<"$headers" || { problem "not a 64-bit Mach-O file ($(format_of "$headers"))"; return; }
  grep -q 'FileType: DynamicLibrary' <<<"$headers" || problem "not a Mach-O dylib"
  grep -q "CpuType: $cpu " <<<"$headers" || problem "CPU is $(sed -n 's/^ *CpuType: //p' <<<"$headers"), not $cpu"
  llvm-nm --defined-only -g "$file" | grep -Eq ' T _napi_register_module_v1$' ||
    problem "does not export _napi_register_module_v1"
  # The dylib's own name (LC_ID_DYLIB): an absolute path would publish the build machine's.
  local id
  id=$(llvm-objdump --macho --dylib-id "$file" | sed -n '2p')
  case "$id" in
    @rpath/* | @loader_path/*) ;;
    *) problem "its install name is ${id:-missing}, not @rpath/… (a build machine's path)" ;;
  esac
  local allowed='^(/usr/lib/libSystem\.B\.dylib|/usr/lib/libiconv\.2\.dylib|/usr/lib/libcharset\.1\.dylib|/usr/lib/libresolv\.9\.dylib|/usr/lib/libc\+\+\.1\.dylib|/System/Library/Frameworks/[A-Za-z]+\.framework/Versions/[A-Z]/[A-Za-z]+)$'
  local lib
  # The first line names the file; the install name of the dylib itself is not a dependency.
  while read -r lib _; do
    [ -n "$lib" ] || continue
    case "$lib" in "$file:" | "$id") continue ;; esac
    grep -Eq "$allowed" <<<"$lib" || problem "links $lib, which macOS does not guarantee"
  done < <(llvm-objdump --macho --dylibs-used "$file")
  # Each undefined symbol names where it binds: a system library, or (flat lookup) the process,
  # which is only right for Node-API.
  local line name from
  while read -r line; do
    [ -n "$line" ] || continue
    name=$(awk '{print $3}' <<<"$line")
    from=$(sed -n 's/.*(\(from\|dynamically\) *\([^)]*\)).*/\1 \2/p' <<<"$line")
    case "$from" in
      "from libSystem" | "from libiconv" | "from libcharset" | "from libresolv" | "from CoreFoundation" | "from Security" | "from SystemConfiguration") ;;
      "dynamically looked up")
        case "$name" in _napi_* | _node_api_*) ;; *) symbol_problem "$name is looked up in the loading process but is not Node-API" ;; esac
        ;;
      *) symbol_problem "$name binds to ${from:-nothing}" ;;
    esac
  done < <(llvm-nm -m --undefined-only "$file")
}

check_pe() {
  local file=$1 machine=$2
  local headers imports dll
  headers=$(llvm-readobj --file-headers "$file")
  grep -q '^Format: COFF-' <<<"$headers" || { problem "not a PE/COFF file ($(format_of "$headers"))"; return; }
  grep -q "Machine: $machine " <<<"$headers" || problem "machine is $(sed -n 's/^ *Machine: //p' <<<"$headers" | head -n1), not $machine"
  grep -q 'IMAGE_FILE_DLL' <<<"$headers" || problem "not a DLL"
  llvm-readobj --coff-exports "$file" | grep -Eq 'Name: napi_register_module_v1$' ||
    problem "does not export napi_register_module_v1"
  # System DLLs every Windows 10+ has; node.exe only for Node-API imports.
  local allowed='^(kernel32|ntdll|advapi32|bcrypt|bcryptprimitives|ws2_32|userenv|msvcrt|ucrtbase|secur32|crypt32|ncrypt|ole32|oleaut32|shell32|user32|iphlpapi|synchronization|api-ms-win-[a-z0-9-]+)\.dll$'
  imports=$(llvm-readobj --coff-imports "$file")
  while read -r dll; do
    [ -n "$dll" ] || continue
    if [ "$(tr 'A-Z' 'a-z' <<<"$dll")" = node.exe ]; then
      awk -v d="$dll" '/Name: /{cur=$2} /Symbol: /{if (cur==d) print $2}' <<<"$imports" | grep -Ev '^(napi_|node_api_)' |
        while read -r sym; do echo "imports $sym from node.exe, which is not Node-API"; done >"${TMPDIR:-/tmp}/check-addons.$$"
      while read -r line; do problem "$line"; done <"${TMPDIR:-/tmp}/check-addons.$$"
      rm -f "${TMPDIR:-/tmp}/check-addons.$$"
      continue
    fi
    grep -Eqi "$allowed" <<<"$dll" || problem "imports $dll, which Windows does not ship"
  done < <(sed -n 's/^ *Name: \(.*\.[dD][lL][lL]\|.*\.[eE][xX][eE]\)$/\1/p' <<<"$imports")
}

passed=0
failed=0
for pair in "${pairs[@]}"; do
  triple=${pair%%=*}
  file=${pair#*=}
  problems=""
  symbol_problems=0
  if [ ! -f "$file" ]; then
    problem "missing ($file)"
    bytes=0
  else
    bytes=$(wc -c <"$file" | tr -d ' ')
    [ "$bytes" -ge "$min_bytes" ] || problem "$bytes bytes, under $min_bytes (truncated or empty build?)"
    [ "$bytes" -le "$max_bytes" ] || problem "$bytes bytes, over MAX_ADDON_BYTES=$max_bytes"
    if ! llvm-readobj --file-headers "$file" >/dev/null 2>&1; then
      problem "not an object file LLVM can read"
    else
      case "$triple" in
        linux-x64-gnu) check_elf "$file" EM_X86_64 gnu ;;
        linux-arm64-gnu) check_elf "$file" EM_AARCH64 gnu ;;
        linux-x64-musl) check_elf "$file" EM_X86_64 musl ;;
        linux-arm64-musl) check_elf "$file" EM_AARCH64 musl ;;
        darwin-x64) check_macho "$file" X86-64 ;;
        darwin-arm64) check_macho "$file" Arm64 ;;
        win32-x64-gnu | win32-x64-msvc) check_pe "$file" IMAGE_FILE_MACHINE_AMD64 ;;
        *) problem "unknown platform $triple" ;;
      esac
    fi
  fi
  [ "$symbol_problems" -le 5 ] || problem "and $((symbol_problems - 5)) more undefined symbols like these"
  if [ -z "$problems" ]; then
    passed=$((passed + 1))
    printf 'ok   %-16s %9s bytes  %s\n' "$triple" "$bytes" "$file"
  else
    failed=$((failed + 1))
    printf 'FAIL %-16s %s: %s\n' "$triple" "$file" "${problems#; }"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

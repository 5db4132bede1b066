# Shared by scripts/kernel-test and scripts/bluez-test (sourced, not run): Debian's kernel booted in qemu with an
# initramfs built here, holding busybox, a statically linked `ble` and the kernel's Bluetooth modules.
# The caller sets `tool` (its name, for messages) and runs from the repository's root.

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# guest_install PACKAGE...: installs the Debian packages given (the caller decides which are missing).
guest_install() {
    [ $# -gt 0 ] || return 0
    echo "== installing $* (Debian packages)"
    as_root sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $*" \
        > "/tmp/$tool-apt.log" 2>&1 || { cat "/tmp/$tool-apt.log"; echo "$tool: could not install $*" >&2; exit 1; }
}

# guest_base_packages: prints the packages the guest's base needs and lacks here.
guest_base_packages() {
    command -v qemu-system-x86_64 > /dev/null || echo qemu-system-x86
    command -v busybox > /dev/null && busybox --list 2>/dev/null | grep -qx insmod || echo busybox-static
    command -v cpio > /dev/null || echo cpio
    command -v modprobe > /dev/null || echo kmod
    ls /boot/vmlinuz-* > /dev/null 2>&1 || echo linux-image-amd64
}

# guest_kernel: sets kernel (the newest /boot/vmlinuz-*) and kver.
guest_kernel() {
    kernel="$(ls /boot/vmlinuz-* | sort -V | tail -1)"
    kver="${kernel#/boot/vmlinuz-}"
    [ -d "/lib/modules/$kver" ] || { echo "$tool: no modules for $kver in /lib/modules" >&2; exit 1; }
}

# guest_build_ble: sets ble, building it with the Swift runtime linked in when the caller gave none.
guest_build_ble() {
    if [ -z "$ble" ]; then
        echo "== building ble with the Swift runtime linked in (swift build --static-swift-stdlib, .build-static)"
        local start=$(date +%s)
        mkdir -p .build-static
        if ! swift build --static-swift-stdlib --product ble --scratch-path .build-static > .build-static/build.log 2>&1; then
            grep -E "error:" .build-static/build.log | sort -u | head -20
            echo "$tool: the static build failed (log: .build-static/build.log)" >&2
            exit 1
        fi
        ble="$(swift build --static-swift-stdlib --scratch-path .build-static --show-bin-path)/ble"
        echo "built in $(( $(date +%s) - start )) s: $ble"
    fi
    [ -x "$ble" ] || { echo "$tool: $ble is not an executable" >&2; exit 1; }
}

# guest_copy_binary ROOT PATH [DEST]: copies an executable into ROOT (at DEST, default its own path) with the shared
# libraries ldd names and the loader, each at the path the binary asks for.
guest_copy_binary() {
    local root="$1" path="$2" dest="${3:-$2}"
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$path" "$root$dest"
    ldd "$path" | awk '/=>/ { print $3 } !/=>/ && /\// { print $1 }' | while read -r lib; do
        [ -f "$lib" ] || continue
        [ -f "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}

# guest_root ROOT APPLET...: a fresh root with busybox and the applets given (all of busybox's with "all"), ble at
# /bin/ble, and the modules of guest_modules (default: hci_vhci, the Bluetooth core and virtual HCI driver) with what
# they depend on, listed in load order in ROOT/modules.
guest_root() {
    local root="$1"; shift
    rm -rf "$root"
    mkdir -p "$root"/{bin,dev,proc,sys,tmp,root,lib,lib64}
    cp "$(command -v busybox)" "$root/bin/busybox"
    local applets="$*"
    [ "$applets" = all ] && applets="$(busybox --list)"
    for applet in $applets; do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    guest_copy_binary "$root" "$ble" /bin/ble
    : > "$root/modules"
    for m in ${guest_modules:-hci_vhci}; do modprobe --show-depends -S "$kver" "$m"; done \
        | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r module; do
        mkdir -p "$root$(dirname "$module")"
        case "$module" in
            *.ko.xz) xz -dc "$module" > "$root${module%.xz}"; module="${module%.xz}" ;;
            *.ko.zst) zstd -qdc "$module" > "$root${module%.zst}"; module="${module%.zst}" ;;
            *) cp "$module" "$root$module" ;;
        esac
        echo "$module" >> "$root/modules"
    done
}

# guest_pack ROOT OUT: the initramfs (newc cpio, gzip).
guest_pack() {
    (cd "$1" && find . | cpio -o -H newc --quiet | gzip -1) > "$2"
}

# guest_accel WORK: sets accel to KVM when /dev/kvm is there and a kernel actually boots on it (nested KVM can open
# and then stall in the firmware, as on the machines this was written on: a 20 s probe waits for the kernel's first
# console line), else to software emulation.
guest_accel() {
    accel=(-accel tcg)
    if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
        local probe="$1/kvm-probe.log"
        timeout 20 qemu-system-x86_64 -enable-kvm -m 256 -nographic -no-reboot -kernel "$kernel" \
            -append "console=ttyS0 panic=-1 rdinit=/nonexistent" < /dev/null > "$probe" 2>&1 || true
        if grep -q "Linux version" "$probe"; then accel=(-enable-kvm); else echo "== KVM does not boot a kernel here: software emulation"; fi
    fi
}

# guest_boot INITRAMFS LOG TIMEOUT MEMORY: boots the kernel on the initramfs, the serial console to LOG; sets
# qemu_status and elapsed.
guest_boot() {
    local start=$(date +%s)
    set +e
    timeout --kill-after=5 "$3" qemu-system-x86_64 "${accel[@]}" -m "$4" -smp 2 -nographic -no-reboot \
        -kernel "$kernel" -initrd "$1" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3" < /dev/null > "$2" 2>&1
    qemu_status=$?
    set -e
    elapsed=$(( $(date +%s) - start ))
}

#if canImport(Glibc)
import Glibc
#endif

/// The Linux HCI user channel: exclusive raw access to an adapter (`hciN`) with the kernel's Bluetooth stack out of
/// the way. Each read or write on the socket is one H4 packet, so it shares ``FileDescriptorTransport``'s datagram
/// framing with the tested code.
public enum UserChannelTransport {
    static let afBluetooth: Int32 = 31
    static let btprotoHCI: Int32 = 1
    static let hciChannelUser: UInt16 = 1

    /// `struct sockaddr_hci` from the kernel's headers.
    struct SockaddrHCI {
        var family: sa_family_t
        var device: UInt16
        var channel: UInt16
    }

    /// Opens adapter `hci<deviceIndex>` on the user channel.
    ///
    /// Fails with ``TransportErrorCode/unsupported`` when the kernel has no Bluetooth support, with
    /// ``TransportErrorCode/permissionDenied`` without CAP_NET_ADMIN, and with ``TransportErrorCode/openFailed``
    /// when the adapter does not exist or is in use (bring it down first: `hciconfig hciN down`).
    public static func open(deviceIndex: UInt16) throws -> FileDescriptorTransport {
        let name = "hci\(deviceIndex)"
        let fd = socket(afBluetooth, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), btprotoHCI)
        guard fd >= 0 else { throw error(for: errno, name: name, step: "socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)") }
        var address = SockaddrHCI(family: sa_family_t(afBluetooth), device: deviceIndex, channel: hciChannelUser)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<SockaddrHCI>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw error(for: e, name: name, step: "bind(HCI_CHANNEL_USER)")
        }
        return try FileDescriptorTransport(fileDescriptor: fd, framing: .datagram, label: name)
    }

    static func error(for code: Int32, name: String, step: String) -> TransportError {
        let reason = String(cString: strerror(code))
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return TransportError(.unsupported, "\(name): this kernel has no Bluetooth support (AF_BLUETOOTH unsupported: \(step) failed: \(reason)); use --hci virtual or tcp:HOST:PORT", errno: code)
        case EPERM, EACCES:
            return TransportError(.permissionDenied, "\(name): permission denied (\(step)); the HCI user channel needs CAP_NET_ADMIN (run as root or grant the capability)", errno: code)
        case ENODEV:
            return TransportError(.openFailed, "\(name): no such adapter (\(step): \(reason))", errno: code)
        case EBUSY, EALREADY:
            return TransportError(.openFailed, "\(name): adapter busy; bring it down first (`hciconfig \(name) down`) (\(step): \(reason))", errno: code)
        default:
            return TransportError(.openFailed, "\(name): \(step) failed: \(reason)", errno: code)
        }
    }
}

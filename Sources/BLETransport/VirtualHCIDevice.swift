#if canImport(Glibc)
import Glibc

/// A controller for the Linux kernel: an adapter `hciN` that the kernel's virtual HCI driver (`/dev/vhci`, module
/// `hci_vhci`) registers, whose controller side is this process.
///
/// The kernel sees a new Bluetooth adapter; every HCI packet a host sends to `hciN` (through the kernel's own stack,
/// or through the HCI user channel) arrives on ``transport`` and every packet written to ``transport`` reaches that
/// host. Attach a virtual controller to it and the kernel has an adapter that needs no hardware: `ble controller
/// --vhci 2` gives it two on one simulated air. Each read or write on the device is one H4 packet.
public struct VirtualHCIDevice: Sendable {
    /// The kernel's index of the adapter: `hci<index>`.
    public let index: UInt16
    /// The controller's side of the adapter.
    public let transport: FileDescriptorTransport

    /// Asks the kernel for a new primary adapter: opens `path`, sends the driver's create request (vendor packet
    /// 0xFF with device type 0x00, a primary controller) and reads the adapter index it answers with.
    ///
    /// Fails with ``TransportErrorCode/unsupported`` when the device file is missing (no `hci_vhci` module: load
    /// it with `modprobe hci_vhci`), ``TransportErrorCode/permissionDenied`` when it may not be opened, and
    /// ``TransportErrorCode/openFailed`` when the kernel does not answer within `timeout` seconds or answers
    /// something else.
    public static func create(path: String = "/dev/vhci", timeout: Double = 2) throws -> VirtualHCIDevice {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let reason = String(cString: strerror(code))
            switch code {
            case ENOENT, ENODEV, ENXIO:
                throw TransportError(.unsupported, "\(path): \(reason); the kernel's virtual HCI driver is not loaded (modprobe hci_vhci)", errno: code)
            case EPERM, EACCES:
                throw TransportError(.permissionDenied, "\(path): permission denied", errno: code)
            default:
                throw TransportError(.openFailed, "\(path): \(reason)", errno: code)
            }
        }
        do {
            let index = try requestAdapter(fd: fd, path: path, timeout: timeout)
            let transport = try FileDescriptorTransport(fileDescriptor: fd, framing: .datagram, label: "vhci hci\(index)",
                                                        startReading: false)
            return VirtualHCIDevice(index: index, transport: transport)
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Vendor packet 0xFF, opcode 0x00 (a primary controller, no quirks); the answer is 0xFF, the same opcode, then
    /// the new adapter's index, little-endian.
    private static func requestAdapter(fd: Int32, path: String, timeout: Double) throws -> UInt16 {
        let request: [UInt8] = [0xFF, 0x00]
        let written = request.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == request.count else {
            let code = errno
            throw TransportError(.openFailed, "\(path): cannot ask for an adapter: \(String(cString: strerror(code)))", errno: code)
        }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(timeout * 1000))
        guard ready > 0 else {
            throw TransportError(.openFailed, "\(path): the kernel did not create an adapter within \(timeout) s")
        }
        var answer = [UInt8](repeating: 0, count: 16)
        let count = answer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count >= 4, answer[0] == 0xFF, answer[1] == 0x00 else {
            let shown = answer.prefix(max(0, count)).map { String($0, radix: 16) }.joined(separator: " ")
            throw TransportError(.openFailed, "\(path): unexpected answer to the create request: [\(shown)]")
        }
        return UInt16(answer[2]) | UInt16(answer[3]) << 8
    }
}
#endif

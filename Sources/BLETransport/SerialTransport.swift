#if canImport(Glibc)
import Glibc
#endif

/// H4 over a UART (a USB dongle running an HCI firmware, or a pseudo-terminal). Core 5.4, Vol 4, Part A.
public enum SerialTransport {
    /// Baud rates this transport can configure, mapped to termios speed constants.
    static let speeds: [Int: speed_t] = [
        9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600),
        115_200: speed_t(B115200), 230_400: speed_t(B230400), 460_800: speed_t(B460800), 500_000: speed_t(B500000),
        576_000: speed_t(B576000), 921_600: speed_t(B921600), 1_000_000: speed_t(B1000000),
        1_500_000: speed_t(B1500000), 2_000_000: speed_t(B2000000), 3_000_000: speed_t(B3000000),
        4_000_000: speed_t(B4000000),
    ]

    /// Opens `path` in raw 8N1 mode at `baudRate`, with RTS/CTS hardware flow control when `flowControl` is set.
    public static func open(path: String, baudRate: Int = 115_200, flowControl: Bool = true) throws -> FileDescriptorTransport {
        guard let speed = speeds[baudRate] else {
            throw TransportError(.invalidSpecification,
                                 "unsupported baud rate \(baudRate); use one of \(speeds.keys.sorted().map(String.init).joined(separator: ", "))")
        }
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            let kind: TransportError.Code = (e == EACCES || e == EPERM) ? .permissionDenied : .openFailed
            throw TransportError(kind, "serial:\(path): cannot open (\(String(cString: strerror(e))))", errno: e)
        }
        var tio = termios()
        guard tcgetattr(fd, &tio) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw TransportError(.openFailed, "serial:\(path): not a terminal device (\(String(cString: strerror(e))))", errno: e)
        }
        cfmakeraw(&tio)
        tio.c_cflag |= tcflag_t(CLOCAL | CREAD)
        tio.c_cflag &= ~tcflag_t(CSTOPB | PARENB)
        if flowControl { tio.c_cflag |= tcflag_t(CRTSCTS) } else { tio.c_cflag &= ~tcflag_t(CRTSCTS) }
        cfsetispeed(&tio, speed)
        cfsetospeed(&tio, speed)
        guard tcsetattr(fd, TCSANOW, &tio) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw TransportError(.openFailed, "serial:\(path): cannot configure (\(String(cString: strerror(e))))", errno: e)
        }
        tcflush(fd, TCIOFLUSH)
        return try FileDescriptorTransport(fileDescriptor: fd, label: "serial:\(path)")
    }
}

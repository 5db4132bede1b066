/// Where to find a controller, as the `--hci` option of the `ble` tool spells it.
///
/// - `virtual`: the embedded virtual controller (opened by the virtual controller module).
/// - `tcp:HOST:PORT`: H4 over TCP.
/// - `serial:PATH[@BAUD][,noflow]`: H4 over a UART, RTS/CTS on unless `,noflow`.
/// - `hciN`: the Linux HCI user channel of adapter N.
public enum HCITransportSpec: Hashable, Sendable, CustomStringConvertible {
    /// The embedded virtual controller.
    case virtual
    /// H4 over TCP.
    case tcp(host: String, port: UInt16)
    /// H4 over a UART.
    case serial(path: String, baudRate: Int, flowControl: Bool)
    /// The Linux HCI user channel of adapter `index`.
    case userChannel(index: UInt16)

    /// Parses a specification string.
    public init(parsing text: String) throws {
        if text == "virtual" {
            self = .virtual
        } else if text.hasPrefix("tcp:") {
            let rest = text.dropFirst(4)
            guard let colon = rest.lastIndex(of: ":"), let port = UInt16(rest[rest.index(after: colon)...]),
                  colon != rest.startIndex else {
                throw TransportError(.invalidSpecification, "'\(text)': expected tcp:HOST:PORT")
            }
            var host = String(rest[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            self = .tcp(host: host, port: port)
        } else if text.hasPrefix("serial:") {
            var rest = Substring(text.dropFirst(7))
            var flow = true
            if rest.hasSuffix(",noflow") {
                flow = false
                rest = rest.dropLast(7)
            }
            var baud = 115_200
            if let at = rest.lastIndex(of: "@") {
                guard let value = Int(rest[rest.index(after: at)...]) else {
                    throw TransportError(.invalidSpecification, "'\(text)': bad baud rate")
                }
                baud = value
                rest = rest[..<at]
            }
            guard !rest.isEmpty else { throw TransportError(.invalidSpecification, "'\(text)': expected serial:PATH[@BAUD]") }
            self = .serial(path: String(rest), baudRate: baud, flowControl: flow)
        } else if text.hasPrefix("hci"), let index = UInt16(text.dropFirst(3)) {
            self = .userChannel(index: index)
        } else {
            throw TransportError(.invalidSpecification,
                                 "'\(text)': expected virtual, tcp:HOST:PORT, serial:PATH[@BAUD][,noflow] or hciN")
        }
    }

    /// Opens a transport for every case except ``virtual`` (which the virtual controller module provides).
    public func open() throws -> any HCITransport {
        switch self {
        case .virtual:
            throw TransportError(.invalidSpecification, "the virtual controller is opened by BLEVirtualController")
        case .tcp(let host, let port):
            return try TCPTransport.connect(host: host, port: port)
        case .serial(let path, let baud, let flow):
            return try SerialTransport.open(path: path, baudRate: baud, flowControl: flow)
        case .userChannel(let index):
            return try UserChannelTransport.open(deviceIndex: index)
        }
    }

    public var description: String {
        switch self {
        case .virtual: "virtual"
        case .tcp(let host, let port): "tcp:\(host):\(port)"
        case .serial(let path, let baud, let flow): "serial:\(path)@\(baud)\(flow ? "" : ",noflow")"
        case .userChannel(let index): "hci\(index)"
        }
    }
}

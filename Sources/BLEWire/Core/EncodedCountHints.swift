// The wire lengths of the PDUs on the data path, so that encoding one takes one allocation of the right size.

extension L2CAPBasicFrame {
    /// The basic L2CAP header (4 bytes) and the payload.
    public var encodedCountHint: Int { 4 + payload.count }
}

extension HCIACLPacket {
    /// The ACL header (4 bytes) and the data.
    public var encodedCountHint: Int { 4 + data.count }
}

extension ATTPDU {
    /// Exact for the PDUs that carry a value (the opcode, a handle where there is one, the value); 32 otherwise.
    public var encodedCountHint: Int {
        switch self {
        case .handleValueNotification(let pdu): 3 + pdu.value.count
        case .handleValueIndication(let pdu): 3 + pdu.value.count
        case .writeCommand(let pdu): 3 + pdu.value.count
        case .writeRequest(let pdu): 3 + pdu.value.count
        case .readResponse(let pdu): 1 + pdu.value.count
        default: 32
        }
    }
}

import BLEWire

/// Which commands complete with Command Status, as data.
///
/// A command the controller does not implement is answered with Unknown HCI Command (0x01) in the event its
/// completion normally uses (Core 5.4, Vol 4, Part E, 4.5): Command Status for the commands below, whose outcome
/// normally arrives in a later event, and Command Complete for every other opcode. The implemented Command Status
/// commands (Disconnect, LE Create Connection, LE Connection Update, LE Read Remote Features, LE Enable Encryption)
/// answer through their typed codec's `completion`.
enum CommandCompletions {
    /// Opcodes, by OGF and OCF, of the commands whose "Event(s) generated" in Core 5.4, Vol 4, Part E, 7 start with
    /// Command Status.
    static let statusCompleting: Set<HCIOpcode> = {
        var set: Set<HCIOpcode> = []
        // Link Control (7.1): Inquiry, Create Connection, Disconnect, Add SCO Connection, Accept/Reject Connection
        // Request, Change Connection Packet Type, Authentication Requested, Set Connection Encryption, Change
        // Connection Link Key, Link Key Selection, Remote Name Request, Read Remote Supported/Extended Features, Read
        // Remote Version Information, Read Clock Offset, (Enhanced) Setup/Accept/Reject Synchronous Connection,
        // Truncated Page, Start/Receive Synchronization Train.
        for ocf: UInt16 in [0x0001, 0x0005, 0x0006, 0x0007, 0x0009, 0x000A, 0x000F, 0x0011, 0x0013, 0x0015, 0x0017,
                            0x0019, 0x001B, 0x001C, 0x001D, 0x001F, 0x0028, 0x0029, 0x002A, 0x003D, 0x003E, 0x003F,
                            0x0043, 0x0044] {
            set.insert(HCIOpcode(ogf: 0x01, ocf: ocf))
        }
        // Link Policy (7.2): Hold Mode, Sniff Mode, Exit Sniff Mode, QoS Setup, Switch Role, Flow Specification.
        for ocf: UInt16 in [0x0001, 0x0003, 0x0004, 0x0007, 0x000B, 0x0010] {
            set.insert(HCIOpcode(ogf: 0x02, ocf: ocf))
        }
        // Controller & Baseband (7.3): Refresh Encryption Key, Enhanced Flush.
        for ocf: UInt16 in [0x0053, 0x005F] {
            set.insert(HCIOpcode(ogf: 0x03, ocf: ocf))
        }
        // LE (7.8): Create Connection, Connection Update, Read Remote Features, Enable Encryption, Read Local P-256
        // Public Key, Generate DHKey v1, Set PHY, Extended Create Connection v1, Periodic Advertising Create Sync,
        // Generate DHKey v2, Create CIS, Accept CIS Request, Create BIG, Create BIG Test, Terminate BIG, BIG Create
        // Sync, Request Peer SCA, Read Remote Transmit Power Level, Subrate Request, Extended Create Connection v2.
        for ocf: UInt16 in [0x000D, 0x0013, 0x0016, 0x0019, 0x0025, 0x0026, 0x0032, 0x0043, 0x0044, 0x005E, 0x0064,
                            0x0066, 0x0068, 0x0069, 0x006A, 0x006B, 0x006D, 0x0077, 0x007E, 0x0085] {
            set.insert(HCIOpcode(ogf: 0x08, ocf: ocf))
        }
        return set
    }()

    /// The completion event an unimplemented `opcode` is answered with.
    static func completion(ofUnknown opcode: HCIOpcode) -> HCICommandCompletion {
        statusCompleting.contains(opcode) ? .commandStatus : .commandComplete
    }
}

// The names of the Supported_Commands bits.

extension HCISupportedCommands {
    /// The command each bit stands for, by octet then bit, from the table in Core 5.4, Vol 4, Part E, 6.27 (octets
    /// 0–46); `nil` where the table is reserved or "previously used". Read Local Supported Commands itself has no bit.
    public static let names: [[String?]] = [
        // Octet 0
        [
            "Inquiry",
            "Inquiry Cancel",
            "Periodic Inquiry Mode",
            "Exit Periodic Inquiry Mode",
            "Create Connection",
            "Disconnect",
            nil,
            "Create Connection Cancel",
        ],
        // Octet 1
        [
            "Accept Connection Request",
            "Reject Connection Request",
            "Link Key Request Reply",
            "Link Key Request Negative Reply",
            "PIN Code Request Reply",
            "PIN Code Request Negative Reply",
            "Change Connection Packet Type",
            "Authentication Requested",
        ],
        // Octet 2
        [
            "Set Connection Encryption",
            "Change Connection Link Key",
            "Link Key Selection",
            "Remote Name Request",
            "Remote Name Request Cancel",
            "Read Remote Supported Features",
            "Read Remote Extended Features",
            "Read Remote Version Information",
        ],
        // Octet 3
        [
            "Read Clock Offset",
            "Read LMP Handle",
            nil,
            nil,
            nil,
            nil,
            nil,
            nil,
        ],
        // Octet 4
        [
            nil,
            "Hold Mode",
            "Sniff Mode",
            "Exit Sniff Mode",
            nil,
            nil,
            "QoS Setup",
            "Role Discovery",
        ],
        // Octet 5
        [
            "Switch Role",
            "Read Link Policy Settings",
            "Write Link Policy Settings",
            "Read Default Link Policy Settings",
            "Write Default Link Policy Settings",
            "Flow Specification",
            "Set Event Mask",
            "Reset",
        ],
        // Octet 6
        [
            "Set Event Filter",
            "Flush",
            "Read PIN Type",
            "Write PIN Type",
            nil,
            "Read Stored Link Key",
            "Write Stored Link Key",
            "Delete Stored Link Key",
        ],
        // Octet 7
        [
            "Write Local Name",
            "Read Local Name",
            "Read Connection Accept Timeout",
            "Write Connection Accept Timeout",
            "Read Page Timeout",
            "Write Page Timeout",
            "Read Scan Enable",
            "Write Scan Enable",
        ],
        // Octet 8
        [
            "Read Page Scan Activity",
            "Write Page Scan Activity",
            "Read Inquiry Scan Activity",
            "Write Inquiry Scan Activity",
            "Read Authentication Enable",
            "Write Authentication Enable",
            nil,
            nil,
        ],
        // Octet 9
        [
            "Read Class of Device",
            "Write Class of Device",
            "Read Voice Setting",
            "Write Voice Setting",
            "Read Automatic Flush Timeout",
            "Write Automatic Flush Timeout",
            "Read Num Broadcast Retransmissions",
            "Write Num Broadcast Retransmissions",
        ],
        // Octet 10
        [
            "Read Hold Mode Activity",
            "Write Hold Mode Activity",
            "Read Transmit Power Level",
            "Read Synchronous Flow Control Enable",
            "Write Synchronous Flow Control Enable",
            "Set Controller To Host Flow Control",
            "Host Buffer Size",
            "Host Number Of Completed Packets",
        ],
        // Octet 11
        [
            "Read Link Supervision Timeout",
            "Write Link Supervision Timeout",
            "Read Number Of Supported IAC",
            "Read Current IAC LAP",
            "Write Current IAC LAP",
            nil,
            nil,
            nil,
        ],
        // Octet 12
        [
            nil,
            "Set AFH Host Channel Classification",
            nil,
            nil,
            "Read Inquiry Scan Type",
            "Write Inquiry Scan Type",
            "Read Inquiry Mode",
            "Write Inquiry Mode",
        ],
        // Octet 13
        [
            "Read Page Scan Type",
            "Write Page Scan Type",
            "Read AFH Channel Assessment Mode",
            "Write AFH Channel Assessment Mode",
            nil,
            nil,
            nil,
            nil,
        ],
        // Octet 14
        [
            nil,
            nil,
            nil,
            "Read Local Version Information",
            nil,
            "Read Local Supported Features",
            "Read Local Extended Features",
            "Read Buffer Size",
        ],
        // Octet 15
        [
            nil,
            "Read BD_ADDR",
            "Read Failed Contact Counter",
            "Reset Failed Contact Counter",
            "Read Link Quality",
            "Read RSSI",
            "Read AFH Channel Map",
            "Read Clock",
        ],
        // Octet 16
        [
            "Read Loopback Mode",
            "Write Loopback Mode",
            "Enable Device Under Test Mode",
            "Setup Synchronous Connection",
            "Accept Synchronous Connection Request",
            "Reject Synchronous Connection Request",
            nil,
            nil,
        ],
        // Octet 17
        [
            "Read Extended Inquiry Response",
            "Write Extended Inquiry Response",
            "Refresh Encryption Key",
            nil,
            "Sniff Subrating",
            "Read Simple Pairing Mode",
            "Write Simple Pairing Mode",
            "Read Local OOB Data",
        ],
        // Octet 18
        [
            "Read Inquiry Response Transmit Power Level",
            "Write Inquiry Transmit Power Level",
            "Read Default Erroneous Data Reporting",
            "Write Default Erroneous Data Reporting",
            nil,
            nil,
            nil,
            "IO Capability Request Reply",
        ],
        // Octet 19
        [
            "User Confirmation Request Reply",
            "User Confirmation Request Negative Reply",
            "User Passkey Request Reply",
            "User Passkey Request Negative Reply",
            "Remote OOB Data Request Reply",
            "Write Simple Pairing Debug Mode",
            "Enhanced Flush",
            "Remote OOB Data Request Negative Reply",
        ],
        // Octet 20
        [
            nil,
            nil,
            "Send Keypress Notification",
            "IO Capability Request Negative Reply",
            "Read Encryption Key Size",
            nil,
            nil,
            nil,
        ],
        // Octet 21
        [
            nil,
            nil,
            nil,
            nil,
            nil,
            nil,
            nil,
            nil,
        ],
        // Octet 22
        [
            nil,
            nil,
            "Set Event Mask Page 2",
            nil,
            nil,
            nil,
            nil,
            nil,
        ],
        // Octet 23
        [
            "Read Flow Control Mode",
            "Write Flow Control Mode",
            "Read Data Block Size",
            nil,
            nil,
            nil,
            nil,
            nil,
        ],
        // Octet 24
        [
            "Read Enhanced Transmit Power Level",
            nil,
            nil,
            nil,
            nil,
            "Read LE Host Support",
            "Write LE Host Support",
            nil,
        ],
        // Octet 25
        [
            "LE Set Event Mask",
            "LE Read Buffer Size [v1]",
            "LE Read Local Supported Features",
            nil,
            "LE Set Random Address",
            "LE Set Advertising Parameters",
            "LE Read Advertising Physical Channel Tx Power",
            "LE Set Advertising Data",
        ],
        // Octet 26
        [
            "LE Set Scan Response Data",
            "LE Set Advertising Enable",
            "LE Set Scan Parameters",
            "LE Set Scan Enable",
            "LE Create Connection",
            "LE Create Connection Cancel",
            "LE Read Filter Accept List Size",
            "LE Clear Filter Accept List",
        ],
        // Octet 27
        [
            "LE Add Device To Filter Accept List",
            "LE Remove Device From Filter Accept List",
            "LE Connection Update",
            "LE Set Host Channel Classification",
            "LE Read Channel Map",
            "LE Read Remote Features",
            "LE Encrypt",
            "LE Rand",
        ],
        // Octet 28
        [
            "LE Enable Encryption",
            "LE Long Term Key Request Reply",
            "LE Long Term Key Request Negative Reply",
            "LE Read Supported States",
            "LE Receiver Test [v1]",
            "LE Transmitter Test [v1]",
            "LE Test End",
            nil,
        ],
        // Octet 29
        [
            nil,
            nil,
            nil,
            "Enhanced Setup Synchronous Connection",
            "Enhanced Accept Synchronous Connection Request",
            "Read Local Supported Codecs [v1]",
            "Set MWS Channel Parameters",
            "Set External Frame Configuration",
        ],
        // Octet 30
        [
            "Set MWS Signaling",
            "Set MWS Transport Layer",
            "Set MWS Scan Frequency Table",
            "Get MWS Transport Layer Configuration",
            "Set MWS PATTERN Configuration",
            "Set Triggered Clock Capture",
            "Truncated Page",
            "Truncated Page Cancel",
        ],
        // Octet 31
        [
            "Set Connectionless Peripheral Broadcast",
            "Set Connectionless Peripheral Broadcast Receive",
            "Start Synchronization Train",
            "Receive Synchronization Train",
            "Set Reserved LT_ADDR",
            "Delete Reserved LT_ADDR",
            "Set Connectionless Peripheral Broadcast Data",
            "Read Synchronization Train Parameters",
        ],
        // Octet 32
        [
            "Write Synchronization Train Parameters",
            "Remote OOB Extended Data Request Reply",
            "Read Secure Connections Host Support",
            "Write Secure Connections Host Support",
            "Read Authenticated Payload Timeout",
            "Write Authenticated Payload Timeout",
            "Read Local OOB Extended Data",
            "Write Secure Connections Test Mode",
        ],
        // Octet 33
        [
            "Read Extended Page Timeout",
            "Write Extended Page Timeout",
            "Read Extended Inquiry Length",
            "Write Extended Inquiry Length",
            "LE Remote Connection Parameter Request Reply",
            "LE Remote Connection Parameter Request Negative Reply",
            "LE Set Data Length",
            "LE Read Suggested Default Data Length",
        ],
        // Octet 34
        [
            "LE Write Suggested Default Data Length",
            "LE Read Local P-256 Public Key",
            "LE Generate DHKey [v1]",
            "LE Add Device To Resolving List",
            "LE Remove Device From Resolving List",
            "LE Clear Resolving List",
            "LE Read Resolving List Size",
            "LE Read Peer Resolvable Address",
        ],
        // Octet 35
        [
            "LE Read Local Resolvable Address",
            "LE Set Address Resolution Enable",
            "LE Set Resolvable Private Address Timeout",
            "LE Read Maximum Data Length",
            "LE Read PHY",
            "LE Set Default PHY",
            "LE Set PHY",
            "LE Receiver Test [v2]",
        ],
        // Octet 36
        [
            "LE Transmitter Test [v2]",
            "LE Set Advertising Set Random Address",
            "LE Set Extended Advertising Parameters",
            "LE Set Extended Advertising Data",
            "LE Set Extended Scan Response Data",
            "LE Set Extended Advertising Enable",
            "LE Read Maximum Advertising Data Length",
            "LE Read Number of Supported Advertising Sets",
        ],
        // Octet 37
        [
            "LE Remove Advertising Set",
            "LE Clear Advertising Sets",
            "LE Set Periodic Advertising Parameters",
            "LE Set Periodic Advertising Data",
            "LE Set Periodic Advertising Enable",
            "LE Set Extended Scan Parameters",
            "LE Set Extended Scan Enable",
            "LE Extended Create Connection",
        ],
        // Octet 38
        [
            "LE Periodic Advertising Create Sync",
            "LE Periodic Advertising Create Sync Cancel",
            "LE Periodic Advertising Terminate Sync",
            "LE Add Device To Periodic Advertiser List",
            "LE Remove Device From Periodic Advertiser List",
            "LE Clear Periodic Advertiser List",
            "LE Read Periodic Advertiser List Size",
            "LE Read Transmit Power",
        ],
        // Octet 39
        [
            "LE Read RF Path Compensation",
            "LE Write RF Path Compensation",
            "LE Set Privacy Mode",
            "LE Receiver Test [v3]",
            "LE Transmitter Test [v3]",
            "LE Set Connectionless CTE Transmit Parameters",
            "LE Set Connectionless CTE Transmit Enable",
            "LE Set Connectionless IQ Sampling Enable",
        ],
        // Octet 40
        [
            "LE Set Connection CTE Receive Parameters",
            "LE Set Connection CTE Transmit Parameters",
            "LE Connection CTE Request Enable",
            "LE Connection CTE Response Enable",
            "LE Read Antenna Information",
            "LE Set Periodic Advertising Receive Enable",
            "LE Periodic Advertising Sync Transfer",
            "LE Periodic Advertising Set Info Transfer",
        ],
        // Octet 41
        [
            "LE Set Periodic Advertising Sync Transfer Parameters",
            "LE Set Default Periodic Advertising Sync Transfer Parameters",
            "LE Generate DHKey [v2]",
            "Read Local Simple Pairing Options",
            "LE Modify Sleep Clock Accuracy",
            "LE Read Buffer Size [v2]",
            "LE Read ISO TX Sync",
            "LE Set CIG Parameters",
        ],
        // Octet 42
        [
            "LE Set CIG Parameters Test",
            "LE Create CIS",
            "LE Remove CIG",
            "LE Accept CIS Request",
            "LE Reject CIS Request",
            "LE Create BIG",
            "LE Create BIG Test",
            "LE Terminate BIG",
        ],
        // Octet 43
        [
            "LE BIG Create Sync",
            "LE BIG Terminate Sync",
            "LE Request Peer SCA",
            "LE Setup ISO Data Path",
            "LE Remove ISO Data Path",
            "LE ISO Transmit Test",
            "LE ISO Receive Test",
            "LE ISO Read Test Counters",
        ],
        // Octet 44
        [
            "LE ISO Test End",
            "LE Set Host Feature",
            "LE Read ISO Link Quality",
            "LE Enhanced Read Transmit Power Level",
            "LE Read Remote Transmit Power Level",
            "LE Set Path Loss Reporting Parameters",
            "LE Set Path Loss Reporting Enable",
            "LE Set Transmit Power Reporting Enable",
        ],
        // Octet 45
        [
            "LE Transmitter Test [v4]",
            "Set Ecosystem Base Interval",
            "Read Local Supported Codecs [v2]",
            "Read Local Supported Codec Capabilities",
            "Read Local Supported Controller Delay",
            "Configure Data Path",
            "LE Set Data Related Address Changes",
            "Set Min Encryption Key Size",
        ],
        // Octet 46
        [
            "LE Set Default Subrate",
            "LE Subrate Request",
            nil,
            nil,
            nil,
            nil,
            nil,
            nil,
        ],
    ]

    /// The name of the command at (`octet`, `bit`), or `nil` when the table has none there.
    public static func name(octet: Int, bit: Int) -> String? {
        guard names.indices.contains(octet), (0..<8).contains(bit) else { return nil }
        return names[octet][bit]
    }

    /// The name of `opcode`'s command, for the opcodes in ``positions``.
    public static func name(of opcode: HCIOpcode) -> String? {
        guard let p = positions[opcode] else { return nil }
        return name(octet: p.octet, bit: p.bit)
    }

    /// The (octet, bit) of every set bit, in order.
    public var listed: [(octet: Int, bit: Int)] {
        var result: [(octet: Int, bit: Int)] = []
        for (octet, value) in octets.enumerated() where value != 0 {
            for bit in 0..<8 where value & (1 << UInt8(bit)) != 0 { result.append((octet, bit)) }
        }
        return result
    }

    /// The names of the listed commands, in bit order; a set bit the table does not name as "octet N bit M".
    public var listedNames: [String] {
        listed.map { Self.name(octet: $0.octet, bit: $0.bit) ?? "octet \($0.octet) bit \($0.bit)" }
    }
}

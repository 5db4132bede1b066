/// A decoded HCI event. Core 5.4, Vol 4, Part E, 7.7.
///
/// Unknown event codes decode to ``unknown(_:)``; a known code with malformed parameters throws ``WireError``.
public enum HCIEvent: Hashable, Sendable {
    /// Command complete.
    case commandComplete(HCICommandCompleteEvent)
    /// Command status.
    case commandStatus(HCICommandStatusEvent)
    /// Disconnection complete.
    case disconnectionComplete(HCIDisconnectionCompleteEvent)
    /// Encryption change.
    case encryptionChange(HCIEncryptionChangeEvent)
    /// Encryption key refresh complete.
    case encryptionKeyRefreshComplete(HCIEncryptionKeyRefreshCompleteEvent)
    /// Number of completed packets.
    case numberOfCompletedPackets(HCINumberOfCompletedPacketsEvent)
    /// Hardware error.
    case hardwareError(HCIHardwareErrorEvent)
    /// Data buffer overflow.
    case dataBufferOverflow(HCIDataBufferOverflowEvent)
    /// LE.
    case le(HCILEMetaEvent)
    /// Unknown.
    case unknown(HCIEventPacket)

    /// Decodes an event packet.
    public init(packet: HCIEventPacket) throws(WireError) {
        let p = packet.parameters
        switch packet.code {
        case .commandComplete: self = .commandComplete(try .init(bytes: p))
        case .commandStatus: self = .commandStatus(try .init(bytes: p))
        case .disconnectionComplete: self = .disconnectionComplete(try .init(bytes: p))
        case .encryptionChange: self = .encryptionChange(try .init(bytes: p))
        case .encryptionKeyRefreshComplete: self = .encryptionKeyRefreshComplete(try .init(bytes: p))
        case .numberOfCompletedPackets: self = .numberOfCompletedPackets(try .init(bytes: p))
        case .hardwareError: self = .hardwareError(try .init(bytes: p))
        case .dataBufferOverflow: self = .dataBufferOverflow(try .init(bytes: p))
        case .leMeta: self = .le(try HCILEMetaEvent(parameters: p))
        default: self = .unknown(packet)
        }
    }

    /// The event as a packet.
    public var packet: HCIEventPacket {
        switch self {
        case .commandComplete(let e): e.packet
        case .commandStatus(let e): e.packet
        case .disconnectionComplete(let e): e.packet
        case .encryptionChange(let e): e.packet
        case .encryptionKeyRefreshComplete(let e): e.packet
        case .numberOfCompletedPackets(let e): e.packet
        case .hardwareError(let e): e.packet
        case .dataBufferOverflow(let e): e.packet
        case .le(let e): e.packet
        case .unknown(let packet): packet
        }
    }
}

/// A decoded LE Meta event. Core 5.4, Vol 4, Part E, 7.7.65.
public enum HCILEMetaEvent: Hashable, Sendable {
    /// Connection complete.
    case connectionComplete(HCILEConnectionCompleteEvent)
    /// Enhanced connection complete.
    case enhancedConnectionComplete(HCILEEnhancedConnectionCompleteEvent)
    /// Advertising report.
    case advertisingReport(HCILEAdvertisingReportEvent)
    /// Extended advertising report.
    case extendedAdvertisingReport(HCILEExtendedAdvertisingReportEvent)
    /// Connection update complete.
    case connectionUpdateComplete(HCILEConnectionUpdateCompleteEvent)
    /// Read remote features complete.
    case readRemoteFeaturesComplete(HCILEReadRemoteFeaturesCompleteEvent)
    /// Long term key request.
    case longTermKeyRequest(HCILELongTermKeyRequestEvent)
    /// Data length change.
    case dataLengthChange(HCILEDataLengthChangeEvent)
    /// PHY update complete.
    case phyUpdateComplete(HCILEPHYUpdateCompleteEvent)
    /// Scan timeout (an extended scan's duration ran out).
    case scanTimeout
    /// Advertising set terminated.
    case advertisingSetTerminated(HCILEAdvertisingSetTerminatedEvent)
    /// Unknown.
    case unknown(subevent: HCILESubeventCode, parameters: [UInt8])

    /// Decodes the parameters of an LE Meta event (subevent code first).
    public init(parameters: [UInt8]) throws(WireError) {
        var reader = ByteReader(parameters)
        let subevent = HCILESubeventCode(rawValue: try reader.readUInt8("Subevent_Code"))
        let rest = reader.readRemaining()
        switch subevent {
        case .connectionComplete: self = .connectionComplete(try .init(bytes: rest))
        case .enhancedConnectionComplete: self = .enhancedConnectionComplete(try .init(bytes: rest))
        case .advertisingReport: self = .advertisingReport(try .init(bytes: rest))
        case .extendedAdvertisingReport: self = .extendedAdvertisingReport(try .init(bytes: rest))
        case .connectionUpdateComplete: self = .connectionUpdateComplete(try .init(bytes: rest))
        case .readRemoteFeaturesComplete: self = .readRemoteFeaturesComplete(try .init(bytes: rest))
        case .longTermKeyRequest: self = .longTermKeyRequest(try .init(bytes: rest))
        case .dataLengthChange: self = .dataLengthChange(try .init(bytes: rest))
        case .phyUpdateComplete: self = .phyUpdateComplete(try .init(bytes: rest))
        case .scanTimeout:
            _ = try HCILEScanTimeoutEvent(bytes: rest)
            self = .scanTimeout
        case .advertisingSetTerminated: self = .advertisingSetTerminated(try .init(bytes: rest))
        default: self = .unknown(subevent: subevent, parameters: rest)
        }
    }

    /// The subevent code.
    public var subevent: HCILESubeventCode {
        switch self {
        case .connectionComplete: .connectionComplete
        case .enhancedConnectionComplete: .enhancedConnectionComplete
        case .advertisingReport: .advertisingReport
        case .extendedAdvertisingReport: .extendedAdvertisingReport
        case .connectionUpdateComplete: .connectionUpdateComplete
        case .readRemoteFeaturesComplete: .readRemoteFeaturesComplete
        case .longTermKeyRequest: .longTermKeyRequest
        case .dataLengthChange: .dataLengthChange
        case .phyUpdateComplete: .phyUpdateComplete
        case .scanTimeout: .scanTimeout
        case .advertisingSetTerminated: .advertisingSetTerminated
        case .unknown(let subevent, _): subevent
        }
    }

    /// The event as a packet.
    public var packet: HCIEventPacket {
        switch self {
        case .connectionComplete(let e): e.packet
        case .enhancedConnectionComplete(let e): e.packet
        case .advertisingReport(let e): e.packet
        case .extendedAdvertisingReport(let e): e.packet
        case .connectionUpdateComplete(let e): e.packet
        case .readRemoteFeaturesComplete(let e): e.packet
        case .longTermKeyRequest(let e): e.packet
        case .dataLengthChange(let e): e.packet
        case .phyUpdateComplete(let e): e.packet
        case .scanTimeout: HCILEScanTimeoutEvent().packet
        case .advertisingSetTerminated(let e): e.packet
        case .unknown(let subevent, let parameters): HCIEventPacket(code: .leMeta, parameters: [subevent.rawValue] + parameters)
        }
    }
}

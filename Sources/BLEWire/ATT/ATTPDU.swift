/// Any ATT PDU. Core 5.4, Vol 3, Part F, 3.4.
///
/// An unknown opcode decodes to ``unknown(opcode:parameters:)`` (a server answers an unknown request with Request
/// Not Supported and ignores an unknown command); a known opcode with malformed parameters throws ``WireError`` (a
/// server answers Invalid PDU).
public enum ATTPDU: Hashable, Sendable, WireCodable {
    /// Error response.
    case errorResponse(ATTErrorResponse)
    /// Exchange MTU request.
    case exchangeMTURequest(ATTExchangeMTURequest)
    /// Exchange MTU response.
    case exchangeMTUResponse(ATTExchangeMTUResponse)
    /// Find information request.
    case findInformationRequest(ATTFindInformationRequest)
    /// Find information response.
    case findInformationResponse(ATTFindInformationResponse)
    /// Find by type value request.
    case findByTypeValueRequest(ATTFindByTypeValueRequest)
    /// Find by type value response.
    case findByTypeValueResponse(ATTFindByTypeValueResponse)
    /// Read by type request.
    case readByTypeRequest(ATTReadByTypeRequest)
    /// Read by type response.
    case readByTypeResponse(ATTReadByTypeResponse)
    /// Read request.
    case readRequest(ATTReadRequest)
    /// Read response.
    case readResponse(ATTReadResponse)
    /// Read blob request.
    case readBlobRequest(ATTReadBlobRequest)
    /// Read blob response.
    case readBlobResponse(ATTReadBlobResponse)
    /// Read multiple request.
    case readMultipleRequest(ATTReadMultipleRequest)
    /// Read multiple response.
    case readMultipleResponse(ATTReadMultipleResponse)
    /// Read by group type request.
    case readByGroupTypeRequest(ATTReadByGroupTypeRequest)
    /// Read by group type response.
    case readByGroupTypeResponse(ATTReadByGroupTypeResponse)
    /// Write request.
    case writeRequest(ATTWriteRequest)
    /// Write response.
    case writeResponse(ATTWriteResponse)
    /// Write command.
    case writeCommand(ATTWriteCommand)
    /// Signed write command.
    case signedWriteCommand(ATTSignedWriteCommand)
    /// Prepare write request.
    case prepareWriteRequest(ATTPrepareWriteRequest)
    /// Prepare write response.
    case prepareWriteResponse(ATTPrepareWriteResponse)
    /// Execute write request.
    case executeWriteRequest(ATTExecuteWriteRequest)
    /// Execute write response.
    case executeWriteResponse(ATTExecuteWriteResponse)
    /// Handle value notification.
    case handleValueNotification(ATTHandleValueNotification)
    /// Handle value indication.
    case handleValueIndication(ATTHandleValueIndication)
    /// Handle value confirmation.
    case handleValueConfirmation(ATTHandleValueConfirmation)
    /// Read multiple variable request.
    case readMultipleVariableRequest(ATTReadMultipleVariableRequest)
    /// Read multiple variable response.
    case readMultipleVariableResponse(ATTReadMultipleVariableResponse)
    /// Multiple handle value notification.
    case multipleHandleValueNotification(ATTMultipleHandleValueNotification)
    /// Unknown.
    case unknown(opcode: ATTOpcode, parameters: [UInt8])

    public init(from r: inout ByteReader) throws(WireError) {
        let opcode = ATTOpcode(rawValue: try r.readUInt8("ATT opcode"))
        if let minimum = opcode.minimumPDULength, r.remainingCount + 1 < minimum {
            throw WireError(.truncated, "\(opcode) PDU of \(r.remainingCount + 1) byte(s); minimum \(minimum)")
        }
        switch opcode {
        case .errorResponse: self = .errorResponse(try .init(from: &r))
        case .exchangeMTURequest: self = .exchangeMTURequest(try .init(from: &r))
        case .exchangeMTUResponse: self = .exchangeMTUResponse(try .init(from: &r))
        case .findInformationRequest: self = .findInformationRequest(try .init(from: &r))
        case .findInformationResponse: self = .findInformationResponse(try .init(from: &r))
        case .findByTypeValueRequest: self = .findByTypeValueRequest(try .init(from: &r))
        case .findByTypeValueResponse: self = .findByTypeValueResponse(try .init(from: &r))
        case .readByTypeRequest: self = .readByTypeRequest(try .init(from: &r))
        case .readByTypeResponse: self = .readByTypeResponse(try .init(from: &r))
        case .readRequest: self = .readRequest(try .init(from: &r))
        case .readResponse: self = .readResponse(try .init(from: &r))
        case .readBlobRequest: self = .readBlobRequest(try .init(from: &r))
        case .readBlobResponse: self = .readBlobResponse(try .init(from: &r))
        case .readMultipleRequest: self = .readMultipleRequest(try .init(from: &r))
        case .readMultipleResponse: self = .readMultipleResponse(try .init(from: &r))
        case .readByGroupTypeRequest: self = .readByGroupTypeRequest(try .init(from: &r))
        case .readByGroupTypeResponse: self = .readByGroupTypeResponse(try .init(from: &r))
        case .writeRequest: self = .writeRequest(try .init(from: &r))
        case .writeResponse: self = .writeResponse(try .init(from: &r))
        case .writeCommand: self = .writeCommand(try .init(from: &r))
        case .signedWriteCommand: self = .signedWriteCommand(try .init(from: &r))
        case .prepareWriteRequest: self = .prepareWriteRequest(try .init(from: &r))
        case .prepareWriteResponse: self = .prepareWriteResponse(try .init(from: &r))
        case .executeWriteRequest: self = .executeWriteRequest(try .init(from: &r))
        case .executeWriteResponse: self = .executeWriteResponse(try .init(from: &r))
        case .handleValueNotification: self = .handleValueNotification(try .init(from: &r))
        case .handleValueIndication: self = .handleValueIndication(try .init(from: &r))
        case .handleValueConfirmation: self = .handleValueConfirmation(try .init(from: &r))
        case .readMultipleVariableRequest: self = .readMultipleVariableRequest(try .init(from: &r))
        case .readMultipleVariableResponse: self = .readMultipleVariableResponse(try .init(from: &r))
        case .multipleHandleValueNotification: self = .multipleHandleValueNotification(try .init(from: &r))
        default: self = .unknown(opcode: opcode, parameters: r.readRemaining())
        }
    }

    /// The parameters of the known cases, as their protocol.
    private var parameters: (any ATTPDUParameters)? {
        switch self {
        case .errorResponse(let p): p
        case .exchangeMTURequest(let p): p
        case .exchangeMTUResponse(let p): p
        case .findInformationRequest(let p): p
        case .findInformationResponse(let p): p
        case .findByTypeValueRequest(let p): p
        case .findByTypeValueResponse(let p): p
        case .readByTypeRequest(let p): p
        case .readByTypeResponse(let p): p
        case .readRequest(let p): p
        case .readResponse(let p): p
        case .readBlobRequest(let p): p
        case .readBlobResponse(let p): p
        case .readMultipleRequest(let p): p
        case .readMultipleResponse(let p): p
        case .readByGroupTypeRequest(let p): p
        case .readByGroupTypeResponse(let p): p
        case .writeRequest(let p): p
        case .writeResponse(let p): p
        case .writeCommand(let p): p
        case .signedWriteCommand(let p): p
        case .prepareWriteRequest(let p): p
        case .prepareWriteResponse(let p): p
        case .executeWriteRequest(let p): p
        case .executeWriteResponse(let p): p
        case .handleValueNotification(let p): p
        case .handleValueIndication(let p): p
        case .handleValueConfirmation(let p): p
        case .readMultipleVariableRequest(let p): p
        case .readMultipleVariableResponse(let p): p
        case .multipleHandleValueNotification(let p): p
        case .unknown: nil
        }
    }

    /// The PDU's opcode.
    public var opcode: ATTOpcode {
        if case .unknown(let opcode, _) = self { return opcode }
        return parameters.map { type(of: $0).opcode } ?? ATTOpcode(rawValue: 0)
    }

    public func encode(into w: inout ByteWriter) {
        w.write(opcode.rawValue)
        if case .unknown(_, let bytes) = self {
            w.write(bytes)
        } else {
            parameters?.encode(into: &w)
        }
    }

    /// Whether a server must answer this PDU (known requests, and unknown non-command opcodes).
    public var needsResponse: Bool {
        if case .unknown(let opcode, _) = self { return !opcode.isCommand && !opcode.isResponse }
        return opcode.isRequest
    }

    /// Whether the PDU is a notification or an indication.
    public var isNotificationOrIndication: Bool {
        switch self {
        case .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification: true
        default: false
        }
    }
}

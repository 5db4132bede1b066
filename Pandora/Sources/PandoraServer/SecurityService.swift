import BLE
import BLEWire
import Foundation
import GRPCCore
import PandoraInterfaces
import SwiftProtobuf

/// `pandora.Security` for LE links: Secure, WaitSecurity and the OnPairing stream. The BR/EDR levels (`classic`)
/// answer UNIMPLEMENTED.
///
/// The LE levels are LE security mode 1's (Core 5.4, Vol 3, Part C, 10.2.1): 1 no security, 2 encryption with an
/// unauthenticated key (Just Works), 3 encryption with an authenticated key (Passkey Entry, Numeric Comparison, OOB),
/// 4 authenticated LE Secure Connections with a 128-bit key. A Just Works pairing does not reach level 3.
struct SecurityService: Pandora_Security.SimpleServiceProtocol {
    let device: PandoraDevice

    func onPairing(request: RPCAsyncSequence<Pandora_PairingEventAnswer, any Error>, response: RPCWriter<Pandora_PairingEvent>,
                   context: ServerContext) async throws {
        _ = try await device.current()
        let pairing = device.pairing
        let (id, events) = pairing.open()
        defer { pairing.close(id) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The answers; the client closing its side does not end the call (events may still come).
            group.addTask {
                for try await answer in request { pairing.answer(answer, from: id) }
            }
            // Until the client cancels the call, or a newer OnPairing replaces this one.
            for await event in events { try await response.write(event) }
            group.cancelAll()
        }
    }

    func secure(request: Pandora_SecureRequest, context: ServerContext) async throws -> Pandora_SecureResponse {
        var response = Pandora_SecureResponse()
        let level = try Self.leLevel(request.level)
        let token = request.connection.cookie.value
        let stack = try await device.current()
        guard let link = await device.link(token) else {
            throw RPCError(code: .notFound, message: "Secure: no connection with this token")
        }
        guard link.isConnected else {
            response.connectionDied = Google_Protobuf_Empty()
            return response
        }
        if let current = await stack.adapter.security(of: link.connection), Self.reaches(current, level) {
            response.success = Google_Protobuf_Empty()
            return response
        }
        // Levels 3 and 4 need an authenticated key: pairing with MITM protection (a bond's key only when it is one).
        let mitm = level >= 2
        do {
            let security: LinkSecurity
            if let remote = link.remote {
                security = try await remote.pair(mitm: mitm)
            } else {
                // A link this side accepted: as peripheral it asks the central to pair (Security Request).
                security = try await stack.peripheral.requestSecurity(of: link.connection, mitm: mitm)
            }
            await device.setSecurity(security, of: token)
            if Self.reaches(security, level) {
                response.success = Google_Protobuf_Empty()
            } else {
                response.notReached = Google_Protobuf_Empty()
            }
        } catch let error as SecurityError {
            if error.code.pairingFailure != nil || error.code == .timedOut {
                response.pairingFailure = Google_Protobuf_Empty()
            } else if error.code.hciStatus != nil {
                // Encryption failed with a status.
                response.encryptionFailure = Google_Protobuf_Empty()
            } else {
                // Disconnected, or a code added later: the link is what failed.
                response.connectionDied = Google_Protobuf_Empty()
            }
        }
        // The link may have gone down while the pairing failed: that is what happened to it.
        if case .pairingFailure? = response.result, await device.link(token)?.isConnected == false {
            response.connectionDied = Google_Protobuf_Empty()
        }
        return response
    }

    func waitSecurity(request: Pandora_WaitSecurityRequest, context: ServerContext) async throws -> Pandora_WaitSecurityResponse {
        let level: Int
        switch request.level {
        case .le(let le)?: level = try Self.leLevel(.le(le))
        case .classic?: throw HostService.brEDR("WaitSecurity at a BR/EDR level")
        case nil: throw RPCError(code: .invalidArgument, message: "WaitSecurity needs a level")
        }
        let token = request.connection.cookie.value
        _ = try await device.current()
        guard let start = await device.link(token) else {
            throw RPCError(code: .notFound, message: "WaitSecurity: no connection with this token")
        }
        enum Outcome: Sendable { case success, connectionDied, pairingFailure, encryptionFailure, authenticationFailure }
        // Reached, or the link went down, or a pairing or encryption on it failed since the call began; a pairing
        // that completed without reaching the level (Just Works where 3 or 4 is asked) is an authentication failure.
        let outcome = try await device.wait { links -> Outcome? in
            guard let link = links[token] else { return .connectionDied }
            if link.isConnected && Self.reaches(link.security, level) { return .success }
            if !link.isConnected { return .connectionDied }
            if link.pairingFailures > start.pairingFailures { return .pairingFailure }
            if link.encryptionFailures > start.encryptionFailures { return .encryptionFailure }
            if link.pairings > start.pairings { return .authenticationFailure }
            return nil
        }
        var response = Pandora_WaitSecurityResponse()
        switch outcome {
        case .success: response.success = Google_Protobuf_Empty()
        case .connectionDied: response.connectionDied = Google_Protobuf_Empty()
        case .pairingFailure: response.pairingFailure = Google_Protobuf_Empty()
        case .encryptionFailure: response.encryptionFailure = Google_Protobuf_Empty()
        case .authenticationFailure: response.authenticationFailure = Google_Protobuf_Empty()
        }
        return response
    }

    // MARK: Levels

    /// The LE level asked for, 0 (LE_LEVEL1) to 3 (LE_LEVEL4).
    static func leLevel(_ level: Pandora_SecureRequest.OneOf_Level?) throws(RPCError) -> Int {
        switch level {
        case .le(let le)?:
            switch le {
            case .leLevel1: return 0
            case .leLevel2: return 1
            case .leLevel3: return 2
            case .leLevel4: return 3
            case .UNRECOGNIZED(let value): throw RPCError(code: .invalidArgument, message: "LE security level \(value) is unknown")
            }
        case .classic?: throw HostService.brEDR("Secure at a BR/EDR level")
        case nil: throw RPCError(code: .invalidArgument, message: "Secure needs a level")
        }
    }

    /// Whether `security` is at LE level `level` (0 for LE_LEVEL1 … 3 for LE_LEVEL4) or above.
    static func reaches(_ security: LinkSecurity, _ level: Int) -> Bool {
        switch level {
        case ...0: return true
        case 1: return security.isEncrypted
        case 2: return security.isAuthenticated
        default:
            guard let key = security.level else { return false }
            return key.authenticated && key.secureConnections && key.keySize == 16
        }
    }
}

import BLE
import BLEWire
import Foundation
import GRPCCore
import PandoraInterfaces
import SwiftProtobuf

/// `pandora.SecurityStorage` over the adapter's bonds: IsBonded and DeleteBond by a peer's public or random address.
/// A bond matches by the address the peer distributed as its identity (public or random static) or, for a peer that
/// paired through another address, by that one.
struct SecurityStorageService: Pandora_SecurityStorage.SimpleServiceProtocol {
    let device: PandoraDevice

    func isBonded(request: Pandora_IsBondedRequest, context: ServerContext) async throws -> Google_Protobuf_BoolValue {
        let peer = try Self.peer(request.address)
        let bonds = try await Self.bonds(of: device)
        return Google_Protobuf_BoolValue(bonds.contains { Self.matches($0, peer) })
    }

    func deleteBond(request: Pandora_DeleteBondRequest, context: ServerContext) async throws -> Google_Protobuf_Empty {
        let peer = try Self.peer(request.address)
        let adapter = try await device.current().adapter
        for bond in try await Self.bonds(of: device) where Self.matches(bond, peer) {
            do {
                _ = try await adapter.removeBond(bond.peer)
            } catch {
                throw RPCError(code: .internalError, message: "DeleteBond: \(error)")
            }
        }
        return Google_Protobuf_Empty()
    }

    /// The address asked about and whether it is random.
    static func peer(_ address: Pandora_IsBondedRequest.OneOf_Address?) throws(RPCError) -> (address: BluetoothAddress, random: Bool) {
        switch address {
        case .public(let bytes): (try HostService.address(bytes, "public"), false)
        case .random(let bytes): (try HostService.address(bytes, "random"), true)
        case nil: throw RPCError(code: .invalidArgument, message: "an address (public or random) is needed")
        }
    }

    static func peer(_ address: Pandora_DeleteBondRequest.OneOf_Address?) throws(RPCError) -> (address: BluetoothAddress, random: Bool) {
        switch address {
        case .public(let bytes): (try HostService.address(bytes, "public"), false)
        case .random(let bytes): (try HostService.address(bytes, "random"), true)
        case nil: throw RPCError(code: .invalidArgument, message: "an address (public or random) is needed")
        }
    }

    static func bonds(of device: PandoraDevice) async throws -> [Bond] {
        let adapter = try await device.current().adapter
        do {
            return try await adapter.bonds()
        } catch {
            throw RPCError(code: .internalError, message: "cannot read the bonds: \(error)")
        }
    }

    static func matches(_ bond: Bond, _ peer: (address: BluetoothAddress, random: Bool)) -> Bool {
        [bond.peer, bond.pairedThrough].contains { address in
            guard let address else { return false }
            return address.address == peer.address && address.type.isRandom == peer.random
        }
    }
}

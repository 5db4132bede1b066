import BLEWire
import Foundation
import GRPCCore
import PandoraInterfaces

/// Pandora's `DataTypes` (the AD structures of an advertisement, field by field) to and from swift-ble's
/// ``AdvertisingData``. Strings and byte layouts follow the Pandora servers Avatar is written against: UUIDs as
/// uppercase hex of their advertised width ("183A", "FFFF183A", "FFFF181F-FFFF-1000-8000-00805F9B34FB"), the URI and
/// the local names as the structure's UTF-8 payload, the TX power level as its octet, manufacturer specific data with
/// its company identifier, addresses most significant octet first.
enum DataTypesCodec {
    /// What the `include_*` fields stand for: this device's name, and the advertising interval in 0.625 ms units.
    struct Context {
        var deviceName: String
        var intervalUnits: UInt16
    }

    // MARK: Encoding (Advertise)

    /// The advertising data `types` describes, structures in the order of the fields in `host.proto`.
    static func advertisingData(_ types: Pandora_DataTypes, context: Context) throws(RPCError) -> AdvertisingData {
        var structures: [ADStructure] = []
        func add(_ type: ADType, _ data: [UInt8]) { structures.append(ADStructure(type: type, data: data)) }
        func uuids(_ strings: [String], width: Int, _ what: String) throws(RPCError) -> [UInt8] {
            var bytes: [UInt8] = []
            for string in strings { bytes += try uuidBytes(string, width: width, what) }
            return bytes
        }

        switch types.leDiscoverabilityMode {
        case .discoverableLimited: add(.flags, [ADFlags.leLimitedDiscoverable.rawValue])
        case .discoverableGeneral: add(.flags, [ADFlags.leGeneralDiscoverable.rawValue])
        case .notDiscoverable, .UNRECOGNIZED: break
        }
        let lists: [([String], ADType, Int, String)] = [
            (types.incompleteServiceClassUuids16, .incomplete16BitServiceUUIDs, 2, "incomplete_service_class_uuids16"),
            (types.completeServiceClassUuids16, .complete16BitServiceUUIDs, 2, "complete_service_class_uuids16"),
            (types.incompleteServiceClassUuids32, .incomplete32BitServiceUUIDs, 4, "incomplete_service_class_uuids32"),
            (types.completeServiceClassUuids32, .complete32BitServiceUUIDs, 4, "complete_service_class_uuids32"),
            (types.incompleteServiceClassUuids128, .incomplete128BitServiceUUIDs, 16, "incomplete_service_class_uuids128"),
            (types.completeServiceClassUuids128, .complete128BitServiceUUIDs, 16, "complete_service_class_uuids128"),
        ]
        for (strings, type, width, what) in lists where !strings.isEmpty { add(type, try uuids(strings, width: width, what)) }

        switch types.shortenedLocalNameOneof {
        case .shortenedLocalName(let name): add(.shortenedLocalName, Array(name.utf8))
        case .includeShortenedLocalName(true): add(.shortenedLocalName, Array(context.deviceName.utf8.prefix(8)))
        case .includeShortenedLocalName(false), nil: break
        }
        switch types.completeLocalNameOneof {
        case .completeLocalName(let name): add(.completeLocalName, Array(name.utf8))
        case .includeCompleteLocalName(true): add(.completeLocalName, Array(context.deviceName.utf8))
        case .includeCompleteLocalName(false), nil: break
        }
        switch types.txPowerLevelOneof {
        case .txPowerLevel(let level):
            guard level <= 0xFF else { throw RPCError(code: .invalidArgument, message: "tx_power_level \(level) is not one octet") }
            add(.txPowerLevel, [UInt8(level)])
        case .includeTxPowerLevel(true):
            throw RPCError(code: .unimplemented, message: "include_tx_power_level: swift-ble does not read the controller's TX power")
        case .includeTxPowerLevel(false), nil: break
        }
        switch types.classOfDeviceOneof {
        case .classOfDevice(let value):
            guard value <= 0xFF_FFFF else { throw RPCError(code: .invalidArgument, message: "class_of_device \(value) is not three octets") }
            add(classOfDevice, [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF)])
        case .includeClassOfDevice(true):
            throw RPCError(code: .unimplemented, message: "include_class_of_device: swift-ble is an LE-only host, it has no Class of Device")
        case .includeClassOfDevice(false), nil: break
        }
        if types.peripheralConnectionIntervalMin != 0 {
            let minimum = types.peripheralConnectionIntervalMin
            let maximum = types.peripheralConnectionIntervalMax == 0 ? minimum : types.peripheralConnectionIntervalMax
            guard minimum <= 0xFFFF, maximum <= 0xFFFF else {
                throw RPCError(code: .invalidArgument, message: "peripheral_connection_interval_min/max must fit in 16 bits")
            }
            add(.peripheralConnectionIntervalRange, littleEndian(UInt16(minimum)) + littleEndian(UInt16(maximum)))
        }
        let solicitations: [([String], ADType, Int, String)] = [
            (types.serviceSolicitationUuids16, .solicitation16BitUUIDs, 2, "service_solicitation_uuids16"),
            (types.serviceSolicitationUuids32, .solicitation32BitUUIDs, 4, "service_solicitation_uuids32"),
            (types.serviceSolicitationUuids128, .solicitation128BitUUIDs, 16, "service_solicitation_uuids128"),
        ]
        for (strings, type, width, what) in solicitations where !strings.isEmpty { add(type, try uuids(strings, width: width, what)) }
        let serviceData: [([String: Data], ADType, Int, String)] = [
            (types.serviceDataUuid16, .serviceData16BitUUID, 2, "service_data_uuid16"),
            (types.serviceDataUuid32, .serviceData32BitUUID, 4, "service_data_uuid32"),
            (types.serviceDataUuid128, .serviceData128BitUUID, 16, "service_data_uuid128"),
        ]
        for (entries, type, width, what) in serviceData {
            // Sorted: a map has no order, the advertisement should not change from one call to the next.
            for (uuid, data) in entries.sorted(by: { $0.key < $1.key }) { add(type, try uuidBytes(uuid, width: width, what) + Array(data)) }
        }
        for address in types.publicTargetAddresses { add(.publicTargetAddress, try addressBytes(address, "public_target_addresses")) }
        for address in types.randomTargetAddresses { add(.randomTargetAddress, try addressBytes(address, "random_target_addresses")) }
        if types.appearance != 0 {
            guard types.appearance <= 0xFFFF else { throw RPCError(code: .invalidArgument, message: "appearance must fit in 16 bits") }
            add(.appearance, littleEndian(UInt16(types.appearance)))
        }
        switch types.advertisingIntervalOneof {
        case .advertisingInterval(let interval):
            guard interval <= 0xFFFF else { throw RPCError(code: .invalidArgument, message: "advertising_interval must fit in 16 bits") }
            add(.advertisingInterval, littleEndian(UInt16(interval)))
        case .includeAdvertisingInterval(true): add(.advertisingInterval, littleEndian(context.intervalUnits))
        case .includeAdvertisingInterval(false), nil: break
        }
        if !types.uri.isEmpty { add(.uri, Array(types.uri.utf8)) }
        if !types.leSupportedFeatures.isEmpty { add(leSupportedFeatures, Array(types.leSupportedFeatures)) }
        if !types.manufacturerSpecificData.isEmpty { add(.manufacturerSpecificData, Array(types.manufacturerSpecificData)) }
        return AdvertisingData(structures: structures)
    }

    // MARK: Decoding (Scan)

    /// Every structure of `data` Pandora has a field for; the first of a kind wins for single-valued fields, lists
    /// collect every structure's entries. Malformed structures (a UUID list not a multiple of the UUID width, a
    /// too-short value) contribute what they hold whole and nothing else.
    static func dataTypes(_ data: AdvertisingData) -> Pandora_DataTypes {
        var types = Pandora_DataTypes()
        for structure in data.structures {
            let bytes = structure.data
            switch structure.type {
            case .flags:
                guard let flags = bytes.first, types.leDiscoverabilityMode == .notDiscoverable else { break }
                if flags & ADFlags.leLimitedDiscoverable.rawValue != 0 {
                    types.leDiscoverabilityMode = .discoverableLimited
                } else if flags & ADFlags.leGeneralDiscoverable.rawValue != 0 {
                    types.leDiscoverabilityMode = .discoverableGeneral
                }
            case .incomplete16BitServiceUUIDs: types.incompleteServiceClassUuids16 += uuidStrings(bytes, width: 2)
            case .complete16BitServiceUUIDs: types.completeServiceClassUuids16 += uuidStrings(bytes, width: 2)
            case .incomplete32BitServiceUUIDs: types.incompleteServiceClassUuids32 += uuidStrings(bytes, width: 4)
            case .complete32BitServiceUUIDs: types.completeServiceClassUuids32 += uuidStrings(bytes, width: 4)
            case .incomplete128BitServiceUUIDs: types.incompleteServiceClassUuids128 += uuidStrings(bytes, width: 16)
            case .complete128BitServiceUUIDs: types.completeServiceClassUuids128 += uuidStrings(bytes, width: 16)
            case .shortenedLocalName where types.shortenedLocalNameOneof == nil:
                types.shortenedLocalName = String(decoding: bytes, as: UTF8.self)
            case .completeLocalName where types.completeLocalNameOneof == nil:
                types.completeLocalName = String(decoding: bytes, as: UTF8.self)
            case .txPowerLevel where types.txPowerLevelOneof == nil:
                if let level = bytes.first { types.txPowerLevel = UInt32(level) }
            case Self.classOfDevice where types.classOfDeviceOneof == nil:
                if bytes.count >= 3 { types.classOfDevice = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 }
            case .peripheralConnectionIntervalRange where types.peripheralConnectionIntervalMin == 0:
                if bytes.count >= 4 {
                    types.peripheralConnectionIntervalMin = UInt32(bytes[0]) | UInt32(bytes[1]) << 8
                    types.peripheralConnectionIntervalMax = UInt32(bytes[2]) | UInt32(bytes[3]) << 8
                }
            case .solicitation16BitUUIDs: types.serviceSolicitationUuids16 += uuidStrings(bytes, width: 2)
            case .solicitation32BitUUIDs: types.serviceSolicitationUuids32 += uuidStrings(bytes, width: 4)
            case .solicitation128BitUUIDs: types.serviceSolicitationUuids128 += uuidStrings(bytes, width: 16)
            case .serviceData16BitUUID:
                if let (uuid, value) = serviceData(bytes, width: 2) { types.serviceDataUuid16[uuid] = value }
            case .serviceData32BitUUID:
                if let (uuid, value) = serviceData(bytes, width: 4) { types.serviceDataUuid32[uuid] = value }
            case .serviceData128BitUUID:
                if let (uuid, value) = serviceData(bytes, width: 16) { types.serviceDataUuid128[uuid] = value }
            case .publicTargetAddress: types.publicTargetAddresses += addresses(bytes)
            case .randomTargetAddress: types.randomTargetAddresses += addresses(bytes)
            case .appearance where types.appearance == 0:
                if bytes.count >= 2 { types.appearance = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 }
            case .advertisingInterval where types.advertisingIntervalOneof == nil:
                if bytes.count >= 2 { types.advertisingInterval = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 }
            case .uri where types.uri.isEmpty: types.uri = String(decoding: bytes, as: UTF8.self)
            case Self.leSupportedFeatures where types.leSupportedFeatures.isEmpty: types.leSupportedFeatures = Data(bytes)
            case .manufacturerSpecificData where types.manufacturerSpecificData.isEmpty: types.manufacturerSpecificData = Data(bytes)
            default: break
            }
        }
        return types
    }

    // MARK: Pieces

    /// Class of Device (CSS v11, Part A, 1.6): BLEWire names no constant for this BR/EDR type.
    static let classOfDevice = ADType(rawValue: 0x0D)
    /// LE Supported Features (CSS v11, Part A, 1.19).
    static let leSupportedFeatures = ADType(rawValue: 0x27)

    static func littleEndian(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// A UUID string of the width's form (4, 8 or 32 hex digits; dashes ignored) in over-the-air order (little endian).
    static func uuidBytes(_ string: String, width: Int, _ what: String) throws(RPCError) -> [UInt8] {
        let hex = string.filter { $0 != "-" }
        guard hex.count == width * 2, let bigEndian = hexBytes(hex) else {
            throw RPCError(code: .invalidArgument, message: "\(what): '\(string)' is not a \(width * 8)-bit UUID")
        }
        return bigEndian.reversed()
    }

    /// Over-the-air UUIDs of `width` octets as strings ("183A", "FFFF183A", "FFFF181F-FFFF-1000-8000-00805F9B34FB").
    static func uuidStrings(_ bytes: [UInt8], width: Int) -> [String] {
        stride(from: 0, to: bytes.count - width + 1, by: width).map { uuidString(Array(bytes[$0..<$0 + width])) }
    }

    static func uuidString(_ littleEndian: [UInt8]) -> String {
        let hex = littleEndian.reversed().map { String(format: "%02X", $0) }.joined()
        guard littleEndian.count == 16 else { return hex }
        var text = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { text.append("-") }
            text.append(character)
        }
        return text
    }

    static func serviceData(_ bytes: [UInt8], width: Int) -> (String, Data)? {
        guard bytes.count >= width else { return nil }
        return (uuidString(Array(bytes[0..<width])), Data(bytes[width...]))
    }

    /// Target addresses: six octets each over the air (little endian), most significant first in Pandora.
    static func addresses(_ bytes: [UInt8]) -> [Data] {
        stride(from: 0, to: bytes.count - 5, by: 6).map { Data(bytes[$0..<$0 + 6].reversed()) }
    }

    static func addressBytes(_ address: Data, _ what: String) throws(RPCError) -> [UInt8] {
        guard address.count == 6 else { throw RPCError(code: .invalidArgument, message: "\(what): an address has 6 octets, not \(address.count)") }
        return address.reversed()
    }

    static func hexBytes(_ hex: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex {
            guard let nibble = character.hexDigitValue.map(UInt8.init) else { return nil }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? bytes : nil
    }
}

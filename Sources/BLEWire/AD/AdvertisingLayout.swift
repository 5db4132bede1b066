extension AdvertisingData {
    /// The advertising data and scan response for a name, service UUIDs, a TX power level and manufacturer data: the
    /// one layout rule of the stack — `PeripheralManager.startAdvertising(name:serviceUUIDs:manufacturerData:txPowerLevel:restartAfterConnection:)`,
    /// CoreBluetoothCompat's `CBPeripheralManager.startAdvertising(_:)` and the host's sample devices use it.
    ///
    /// The advertising packet carries the Flags (LE General Discoverable, BR/EDR not supported), the service UUIDs as
    /// complete lists (16-, 32- and 128-bit), the TX power level, the manufacturer data and, when it fits after
    /// them, the complete local name. When the UUIDs do not all fit in the 31-byte packet, as many as fit stay in
    /// it and the next ones go to the scan response, both as incomplete lists (as iOS does; a UUID that fits in
    /// neither is not advertised). A name that does not fit in the packet goes to the scan response, after any
    /// UUIDs there, shortened to whole characters when it must be (Shortened Local Name) and left out when not one
    /// character fits. The TX power level and manufacturer data always stay in the packet: when they do not fit in
    /// it with the Flags, the packet is over 31 bytes and advertising it fails.
    ///
    /// - Parameters:
    ///   - name: the local name (`nil` or empty: none).
    ///   - serviceUUIDs: the service UUIDs, in the order they should be listed.
    ///   - txPowerLevel: the TX Power Level structure's value, in dBm (`nil`: none).
    ///   - manufacturerData: the manufacturer specific data (`nil`: none).
    ///   - scanResponse: structures that belong in the scan response whatever fits (they come first there, before
    ///     UUIDs or a name that did not fit in the packet).
    /// - Returns: the advertising data and the scan response (empty when everything fits in the packet).
    public static func layout(name: String?, serviceUUIDs: [BluetoothUUID], txPowerLevel: Int8? = nil,
                              manufacturerData: ManufacturerData? = nil,
                              scanResponse extras: [ADStructure] = []) -> (data: AdvertisingData, scanResponse: AdvertisingData) {
        let limit = AdvertisingData.legacyMaximumLength
        let flags = ADStructure(type: .flags, data: [ADFlags.leOnlyGeneralDiscoverable.rawValue])
        // What stays in the packet whatever else does not fit.
        let fixed = AdvertisingData(txPowerLevel: txPowerLevel, manufacturerData: manufacturerData).structures
        var data = [flags] + uuidLists(serviceUUIDs, complete: true) + fixed
        var response = extras
        if size(data) > limit {
            // Too many UUIDs: as many as fit in the packet, the next ones in the scan response, both incomplete lists.
            var inData: [BluetoothUUID] = []
            var inResponse: [BluetoothUUID] = []
            for uuid in serviceUUIDs {
                if size([flags] + uuidLists(inData + [uuid], complete: false) + fixed) <= limit {
                    inData.append(uuid)
                } else if size(extras + uuidLists(inResponse + [uuid], complete: false)) <= limit {
                    inResponse.append(uuid)
                }
            }
            data = [flags] + uuidLists(inData, complete: false) + fixed
            response = extras + uuidLists(inResponse, complete: false)
        }
        if let name, !name.isEmpty {
            if response.count == extras.count, size(data) + 2 + name.utf8.count <= limit {
                data.append(ADStructure(type: .completeLocalName, data: Array(name.utf8)))
            } else if let structure = nameStructure(name, room: limit - size(response)) {
                response.append(structure)
            }
        }
        return (AdvertisingData(structures: data), AdvertisingData(structures: response))
    }

    /// The encoded size of AD structures (a length and a type octet each, then the data).
    private static func size(_ structures: [ADStructure]) -> Int { structures.reduce(0) { $0 + 2 + $1.data.count } }

    /// Service UUID lists: one structure per UUID size present (16-, 32-, then 128-bit), complete or incomplete.
    private static func uuidLists(_ uuids: [BluetoothUUID], complete: Bool) -> [ADStructure] {
        let short = uuids.compactMap(\.uint16)
        let medium = uuids.filter { $0.uint16 == nil }.compactMap(\.uint32)
        let long = uuids.filter { $0.uint32 == nil }
        var structures: [ADStructure] = []
        if !short.isEmpty {
            structures.append(ADStructure(type: complete ? .complete16BitServiceUUIDs : .incomplete16BitServiceUUIDs,
                                          data: short.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)] }))
        }
        if !medium.isEmpty {
            structures.append(ADStructure(type: complete ? .complete32BitServiceUUIDs : .incomplete32BitServiceUUIDs,
                                          data: medium.flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) } }))
        }
        if !long.isEmpty {
            structures.append(ADStructure(type: complete ? .complete128BitServiceUUIDs : .incomplete128BitServiceUUIDs,
                                          data: long.flatMap(\.wireBytes128)))
        }
        return structures
    }

    /// The name as a structure of at most `room` bytes: whole (Complete Local Name) if it fits, else shortened to
    /// whole characters (Shortened Local Name); `nil` if not one character fits.
    private static func nameStructure(_ name: String, room: Int) -> ADStructure? {
        let bytes = Array(name.utf8)
        if bytes.count + 2 <= room { return ADStructure(type: .completeLocalName, data: bytes) }
        var shortened = ""
        for character in name {
            guard shortened.utf8.count + String(character).utf8.count + 2 <= room else { break }
            shortened.append(character)
        }
        return shortened.isEmpty ? nil : ADStructure(type: .shortenedLocalName, data: Array(shortened.utf8))
    }
}

import BLE
import BLEProtocols
import BLEWire

extension GATTCapture.Server {
    /// What the replay of a capture answers for a readable value the capture never shows: Read Not Permitted
    /// (0x02). The replay cannot make a value up, and the ATT error that says "this value is not given" is the one
    /// a server answers for a value it does not let clients read (Core 5.4, Vol 3, Part F, 3.4.1.1).
    public static let unseenValueError = ATTErrorCode.readNotPermitted

    /// The device as the capture shows it, as a ``GATTDeviceDescription`` that ``PeripheralManager/serve(_:)`` serves
    /// (`ble serve --replay`): the services, includes, characteristics and descriptors at their handles; each value
    /// the server gave; the error it answered where it refused one; encryption (or authentication) required where a
    /// read or write met a security refusal; a notify timer that plays the notifications and indications it sent,
    /// in order, at their mean spacing; the advertising data and scan response heard before the connection.
    ///
    /// What the capture does not show is not invented: an attribute it never declared is not in the database (a
    /// client gets Attribute Not Found or Invalid Handle, as from the real device for a handle it does not have), and
    /// a readable value it never gave answers ``unseenValueError``. Writes are accepted where the properties allow
    /// them (the replay keeps what is written), as the real device would, unless the capture shows it refusing them
    /// for security.
    public func deviceDescription() -> GATTDeviceDescription {
        let security: Set<ATTErrorCode> = [.insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort]
        var advertisingData = (try? AdvertisingData(bytes: advertisingData ?? [])) ?? AdvertisingData()
        if let response = scanResponseData, let parsed = try? AdvertisingData(bytes: response) {
            advertisingData.structures += parsed.structures
        }
        var advertising = GATTDeviceDescription.advertising(from: advertisingData)
        let starts = services.map(\.start)
        var described: [GATTDeviceDescription.Service] = []
        for (index, service) in services.enumerated() {
            // The next service's declaration bounds this one when the capture's End Group Handle overlaps it.
            let next = index + 1 < services.count ? services[index + 1].start.rawValue : 0
            let end = next > 0 ? min(service.end.rawValue, next &- 1) : service.end.rawValue
            let inside = { (h: AttributeHandle) in h.rawValue > service.start.rawValue && h.rawValue <= end }
            let declared = characteristics.filter { inside($0.declaration) }
            let includeTargets = includes.filter { inside($0.handle) }.compactMap { include in starts.firstIndex(of: include.start) }
            var described_characteristics: [GATTDeviceDescription.Characteristic] = []
            for (ci, c) in declared.enumerated() {
                let properties = GATTCharacteristicProperties(rawValue: c.properties)
                var permissions = GATTDeviceDescription.defaultPermissions(for: properties)
                if let refusal = securityRefusals[c.valueHandle] {
                    if properties.contains(.read) { permissions.insert(.readEncryptionRequired) }
                    if refusal == .insufficientAuthentication && needsAuthentication.contains(c.valueHandle) {
                        permissions.insert(.readAuthenticationRequired)
                    }
                }
                let pushed = notifications.filter { $0.handle == c.valueHandle }
                var value = values[c.valueHandle]
                if value == nil, let last = pushed.last { value = last.value }
                var readError: ATTErrorCode?
                if values[c.valueHandle] == nil, readErrors[c.valueHandle] == .readNotPermitted {
                    // The device itself refuses it: no read permission, as it has.
                    permissions.remove(.readable)
                } else if let error = readErrors[c.valueHandle], !security.contains(error) {
                    readError = error
                } else if value == nil, properties.contains(.read) {
                    // Never given (a security refusal, if any, is answered first by the permissions above).
                    readError = Self.unseenValueError
                }
                // Descriptors: what Find Information listed between this value and the next declaration.
                let limit = ci + 1 < declared.count ? declared[ci + 1].declaration.rawValue : end &+ 1
                let descriptors = attributeTypes
                    .filter { $0.key.rawValue > c.valueHandle.rawValue && $0.key.rawValue < limit }
                    .sorted { $0.key.rawValue < $1.key.rawValue }
                    .map { handle, type -> GATTDeviceDescription.Descriptor in
                        let isConfiguration = type == BluetoothUUID(0x2902)
                        var error: ATTErrorCode?
                        if let e = readErrors[handle], !security.contains(e) { error = e }
                        else if values[handle] == nil && !isConfiguration { error = Self.unseenValueError }
                        var p: GATTPermissions = isConfiguration ? [.readable, .writeable] : .readable
                        if securityRefusals[handle] != nil { p.insert(isConfiguration ? .writeEncryptionRequired : .readEncryptionRequired) }
                        return GATTDeviceDescription.Descriptor(uuid: type, value: values[handle] ?? [], permissions: p, handle: handle,
                                                                readError: error)
                    }
                var timer: GATTDeviceDescription.NotifyTimer?
                if !pushed.isEmpty, !properties.isDisjoint(with: [.notify, .indicate]) {
                    let spacing = pushed.count > 1
                        ? Int((pushed[pushed.count - 1].sinceConnection - pushed[0].sinceConnection) / Int64(pushed.count - 1) / 1000)
                        : 1000
                    timer = GATTDeviceDescription.NotifyTimer(intervalMilliseconds: max(20, spacing), values: pushed.map(\.value))
                }
                var characteristic = GATTDeviceDescription.Characteristic(uuid: c.uuid, properties: properties, permissions: permissions,
                                                                          value: value ?? [], handle: c.declaration, valueHandle: c.valueHandle,
                                                                          readError: readError, descriptors: descriptors)
                characteristic.notify = timer
                described_characteristics.append(characteristic)
            }
            described.append(GATTDeviceDescription.Service(uuid: service.uuid, isPrimary: service.isPrimary, handle: service.start,
                                                           endHandle: AttributeHandle(rawValue: end), includes: includeTargets,
                                                           characteristics: described_characteristics))
        }
        let nameValue = characteristics.first { $0.uuid == BluetoothUUID(0x2A00) }.flatMap { values[$0.valueHandle] }
        let name = nameValue.flatMap { String(validating: $0, as: UTF8.self) }
        if advertising.name == nil { advertising.name = name }
        return GATTDeviceDescription(name: name ?? advertising.name, advertising: advertising, services: described)
    }
}

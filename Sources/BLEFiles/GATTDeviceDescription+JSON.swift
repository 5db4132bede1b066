import BLE
import BLEProtocols
import BLEWire

extension GATTDeviceDescription {
    /// The property names of the format, in bit order. Core 5.4, Vol 3, Part G, 3.3.1.1.
    public static let propertyNames: [(name: String, property: GATTCharacteristicProperties)] = [
        ("broadcast", .broadcast), ("read", .read), ("writeWithoutResponse", .writeWithoutResponse), ("write", .write),
        ("notify", .notify), ("indicate", .indicate), ("authenticatedSignedWrites", .authenticatedSignedWrites),
        ("extendedProperties", .extendedProperties),
    ]
    /// The permission names of the format. Core 5.4, Vol 3, Part F, 3.2.5 and Part C, 10.3.1.
    public static let permissionNames: [(name: String, permission: GATTPermissions)] = [
        ("read", .readable), ("write", .writeable), ("readEncrypted", .readEncryptionRequired), ("writeEncrypted", .writeEncryptionRequired),
        ("readAuthenticated", .readAuthenticationRequired), ("writeAuthenticated", .writeAuthenticationRequired),
        ("secureConnections", .secureConnectionsRequired),
    ]

    /// Reads a description from JSON text (UTF-8). Throws ``GATTDeviceDescriptionError``: for text that is not JSON
    /// the line and column and the reason; for JSON that is not a valid description the JSON path (with its line and
    /// column) and the reason — a wrong type, an unknown member, property or permission, a bad UUID or hex string, a
    /// value over 512 octets (Core 5.4, Vol 3, Part F, 3.2.9), an include pointing nowhere, handles that repeat or go
    /// backwards, a notify timer on a characteristic that neither notifies nor indicates, advertising that does not
    /// fit.
    public init(json bytes: [UInt8]) throws(GATTDeviceDescriptionError) {
        let root: PositionedJSON
        do {
            root = try StrictJSONParser.parse(bytes)
        } catch {
            throw GATTDeviceDescriptionError(path: error.path, line: error.line, column: error.column, reason: error.reason, isSyntaxError: true)
        }
        self = try DescriptionReader.description(root)
        _ = try database()
        _ = try advertisement()
    }

    /// Reads a description from JSON text.
    public init(json text: String) throws(GATTDeviceDescriptionError) { try self.init(json: Array(text.utf8)) }

    /// The description as JSON text: two-space indentation, members in the format's order, handles as numbers,
    /// values as `{"text": ...}` when they are printable ASCII and as hex strings otherwise. ``init(json:)`` reads it
    /// back to an equal description.
    public func jsonText() -> String {
        var root: [(key: String, value: JSONValue)] = [("$schema", "https://github.com/swift-ble/swift-ble/docs/gatt-device.schema.json")]
        if let name { root.append(("name", .string(name))) }
        if let appearance { root.append(("appearance", .int(Int(appearance)))) }
        var ad: [(key: String, value: JSONValue)] = []
        if let n = advertising.name { ad.append(("name", .string(n))) }
        if !advertising.serviceUUIDs.isEmpty { ad.append(("services", .array(advertising.serviceUUIDs.map { .string($0.description) }))) }
        if !advertising.manufacturerData.isEmpty {
            ad.append(("manufacturerData", .array(advertising.manufacturerData.map {
                .object([("company", .int(Int($0.companyID.rawValue))), ("data", Self.json($0.data))])
            })))
        }
        if !advertising.serviceData.isEmpty {
            ad.append(("serviceData", .array(advertising.serviceData.map { .object([("uuid", .string($0.uuid.description)), ("data", Self.json($0.data))]) })))
        }
        if let a = advertising.appearance { ad.append(("appearance", .int(Int(a)))) }
        if let t = advertising.txPowerLevel { ad.append(("txPower", .int(Int(t)))) }
        root.append(("advertising", .object(ad)))
        root.append(("services", .array(services.map { s in
            var o: [(key: String, value: JSONValue)] = [("uuid", .string(s.uuid.description))]
            if !s.isPrimary { o.append(("primary", false)) }
            if let id = s.id { o.append(("id", .string(id))) }
            if let h = s.handle { o.append(("handle", .int(Int(h.rawValue)))) }
            if let h = s.endHandle { o.append(("endHandle", .int(Int(h.rawValue)))) }
            if !s.includes.isEmpty { o.append(("includes", .array(s.includes.map { .int($0) }))) }
            o.append(("characteristics", .array(s.characteristics.map { c in
                var o: [(key: String, value: JSONValue)] = [("uuid", .string(c.uuid.description))]
                if let h = c.handle { o.append(("handle", .int(Int(h.rawValue)))) }
                if let h = c.valueHandle { o.append(("valueHandle", .int(Int(h.rawValue)))) }
                o.append(("properties", .array(Self.propertyNames.filter { c.properties.contains($0.property) }.map { .string($0.name) })))
                if c.permissions != Self.defaultPermissions(for: c.properties) { o.append(("permissions", Self.json(c.permissions))) }
                if !c.value.isEmpty || c.readError == nil { o.append(("value", Self.json(c.value))) }
                if let e = c.readError { o.append(("readError", .string("0x" + hex2(e.rawValue)))) }
                if let n = c.notify {
                    o.append(("notify", .object([("everyMs", .int(n.intervalMilliseconds)), ("values", .array(n.values.map(Self.json)))])))
                }
                if !c.descriptors.isEmpty {
                    o.append(("descriptors", .array(c.descriptors.map { d in
                        var o: [(key: String, value: JSONValue)] = [("uuid", .string(d.uuid.description))]
                        if let h = d.handle { o.append(("handle", .int(Int(h.rawValue)))) }
                        let isCCCD = d.uuid == BluetoothUUID(0x2902)
                        if d.permissions != (isCCCD ? [.readable, .writeable] : GATTPermissions.readable) { o.append(("permissions", Self.json(d.permissions))) }
                        if !isCCCD && (!d.value.isEmpty || d.readError == nil) { o.append(("value", Self.json(d.value))) }
                        if let e = d.readError { o.append(("readError", .string("0x" + hex2(e.rawValue)))) }
                        return .object(o)
                    })))
                }
                return .object(o)
            })))
            return .object(o)
        })))
        return Self.pretty(.object(root), indent: "") + "\n"
    }

    static func json(_ permissions: GATTPermissions) -> JSONValue {
        .array(permissionNames.filter { permissions.contains($0.permission) }.map { .string($0.name) })
    }

    /// A value: `{"text": ...}` when it is printable ASCII, else hex.
    static func json(_ value: [UInt8]) -> JSONValue {
        if !value.isEmpty, value.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return .object([("text", .string(String(decoding: value, as: UTF8.self)))]) }
        return .string(value.hexString().uppercased())
    }

    /// Objects one member a line; arrays of scalars and small objects on one line.
    static func pretty(_ value: JSONValue, indent: String) -> String {
        let inner = indent + "  "
        switch value {
        case .object(let members) where !members.isEmpty && !isFlat(value):
            return "{\n" + members.map { "\(inner)\(JSONValue.string($0.key).encoded()): \(pretty($0.value, indent: inner))" }.joined(separator: ",\n") + "\n\(indent)}"
        case .array(let elements) where !elements.isEmpty && !isFlat(value):
            return "[\n" + elements.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        default:
            return value.encoded().replacingColonsAndCommas()
        }
    }

    /// Whether a value prints on one line: scalars, arrays of scalars, objects of at most two scalar members.
    static func isFlat(_ value: JSONValue) -> Bool {
        switch value {
        case .array(let elements): return elements.allSatisfy { if case .array = $0 { return false }; if case .object = $0 { return isFlat($0) }; return true }
        case .object(let members):
            return members.count <= 2 && members.allSatisfy { if case .array = $0.value { return false }; if case .object = $0.value { return false }; return true }
        default: return true
        }
    }
}

extension String {
    /// `{"a":1,"b":[1,2]}` as `{"a": 1, "b": [1, 2]}` (outside strings).
    func replacingColonsAndCommas() -> String {
        var out = ""
        var inString = false
        var escaped = false
        for ch in self {
            out.append(ch)
            if inString {
                if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { inString = false }
            } else if ch == "\"" {
                inString = true
            } else if ch == ":" || ch == "," {
                out.append(" ")
            }
        }
        return out
    }
}

/// Two uppercase hex digits.
func hex2(_ v: UInt8) -> String {
    let digits = String(v, radix: 16, uppercase: true)
    return digits.count == 1 ? "0" + digits : digits
}

/// Reads a description from a parsed document, naming each mistake by its path.
enum DescriptionReader {
    typealias Failure = GATTDeviceDescriptionError
    typealias Members = [(key: String, value: PositionedJSON)]

    static func fail(_ at: PositionedJSON, _ path: String, _ reason: String) -> Failure {
        Failure(path: path, line: at.line, column: at.column, reason: reason)
    }

    static func object(_ v: PositionedJSON, _ path: String, allowed: [String], required: [String] = []) throws(Failure) -> [String: PositionedJSON] {
        guard case .object(let members) = v.kind else { throw fail(v, path, "expected an object, found \(v.typeName)") }
        var out: [String: PositionedJSON] = [:]
        for (key, value) in members {
            guard allowed.contains(key) || key == "comment" || key == "$schema" && path == "$" else {
                throw fail(value, "\(path).\(key)", "unknown member \"\(key)\" (expected one of \(allowed.joined(separator: ", ")))")
            }
            out[key] = value
        }
        for key in required where out[key] == nil { throw fail(v, path, "the member \"\(key)\" is missing") }
        return out
    }

    static func array(_ v: PositionedJSON, _ path: String) throws(Failure) -> [PositionedJSON] {
        guard case .array(let elements) = v.kind else { throw fail(v, path, "expected an array, found \(v.typeName)") }
        return elements
    }

    static func string(_ v: PositionedJSON, _ path: String) throws(Failure) -> String {
        guard case .string(let s) = v.kind else { throw fail(v, path, "expected a string, found \(v.typeName)") }
        return s
    }

    static func bool(_ v: PositionedJSON, _ path: String) throws(Failure) -> Bool {
        guard case .bool(let b) = v.kind else { throw fail(v, path, "expected true or false, found \(v.typeName)") }
        return b
    }

    /// An integer in `range`: a JSON number, or a string of hex digits after `0x`.
    static func integer(_ v: PositionedJSON, _ path: String, _ range: ClosedRange<Int>, what: String) throws(Failure) -> Int {
        let parsed: Int?
        switch v.kind {
        case .number(let text): parsed = Int(text)
        case .string(let text) where text.hasPrefix("0x") || text.hasPrefix("0X"): parsed = text.count > 2 ? Int(text.dropFirst(2), radix: 16) : nil
        default: throw fail(v, path, "expected \(what) (an integer, or a \"0x...\" string), found \(v.typeName)")
        }
        guard let parsed else { throw fail(v, path, "expected \(what) (an integer, or a \"0x...\" string)") }
        guard range.contains(parsed) else { throw fail(v, path, "\(what) \(parsed) is outside \(range.lowerBound)...\(range.upperBound)") }
        return parsed
    }

    static func uuid(_ v: PositionedJSON, _ path: String) throws(Failure) -> BluetoothUUID {
        let text = try string(v, path)
        guard let uuid = BluetoothUUID(text) else {
            throw fail(v, path, "\"\(text)\" is not a UUID (4 or 8 hex digits, or 8-4-4-4-12 hex digits)")
        }
        return uuid
    }

    static func handle(_ v: PositionedJSON, _ path: String) throws(Failure) -> AttributeHandle {
        AttributeHandle(rawValue: UInt16(try integer(v, path, 1...0xFFFF, what: "a handle")))
    }

    /// A value: a hex string, `{"hex": "..."}` or `{"text": "..."}`; at most 512 octets.
    static func value(_ v: PositionedJSON, _ path: String) throws(Failure) -> [UInt8] {
        let bytes: [UInt8]
        switch v.kind {
        case .string(let text): bytes = try hex(text, v, path)
        case .object:
            let o = try object(v, path, allowed: ["hex", "text"])
            guard o.count == 1 else { throw fail(v, path, "a value is {\"hex\": \"...\"} or {\"text\": \"...\"}, not both and not neither") }
            if let h = o["hex"] {
                bytes = try hex(try string(h, path + ".hex"), h, path + ".hex")
            } else if let t = o["text"] {
                bytes = Array(try string(t, path + ".text").utf8)
            } else {
                bytes = []
            }
        default: throw fail(v, path, "expected a value: a hex string, {\"hex\": \"...\"} or {\"text\": \"...\"}, found \(v.typeName)")
        }
        // Core 5.4, Vol 3, Part F, 3.2.9.
        guard bytes.count <= ATT.maximumAttributeValueLength else {
            throw fail(v, path, "the value is \(bytes.count) octets; an attribute value is at most \(ATT.maximumAttributeValueLength) (Core Vol 3, Part F, 3.2.9)")
        }
        return bytes
    }

    static func hex(_ text: String, _ v: PositionedJSON, _ path: String) throws(Failure) -> [UInt8] {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { throw fail(v, path, "\"\(text)\" is not hex: an odd number of digits") }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = nibble(digits[i]), let lo = nibble(digits[i + 1]) else {
                throw fail(v, path, "\"\(text)\" is not hex: '\(Character(Unicode.Scalar(nibble(digits[i]) == nil ? digits[i] : digits[i + 1])))' is not a hex digit")
            }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    static func nibble(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func names<T: OptionSet>(_ v: PositionedJSON, _ path: String, _ table: [(name: String, value: T)], what: String) throws(Failure) -> T {
        var set: T = []
        for (i, element) in try array(v, path).enumerated() {
            let name = try string(element, "\(path)[\(i)]")
            guard let entry = table.first(where: { $0.name == name }) else {
                throw fail(element, "\(path)[\(i)]", "unknown \(what) \"\(name)\" (expected one of \(table.map(\.name).joined(separator: ", ")))")
            }
            set.formUnion(entry.value)
        }
        return set
    }

    static func properties(_ v: PositionedJSON, _ path: String) throws(Failure) -> GATTCharacteristicProperties {
        try names(v, path, GATTDeviceDescription.propertyNames.map { ($0.name, $0.property) }, what: "property")
    }

    static func permissions(_ v: PositionedJSON, _ path: String) throws(Failure) -> GATTPermissions {
        try names(v, path, GATTDeviceDescription.permissionNames.map { ($0.name, $0.permission) }, what: "permission")
    }

    static func readError(_ v: PositionedJSON, _ path: String) throws(Failure) -> ATTErrorCode {
        ATTErrorCode(rawValue: UInt8(try integer(v, path, 1...0xFF, what: "an ATT error code")))
    }

    static func description(_ root: PositionedJSON) throws(Failure) -> GATTDeviceDescription {
        let o = try object(root, "$", allowed: ["name", "appearance", "advertising", "services"])
        var d = GATTDeviceDescription()
        if let v = o["name"] { d.name = try string(v, "$.name") }
        if let v = o["appearance"] { d.appearance = UInt16(try integer(v, "$.appearance", 0...0xFFFF, what: "an appearance")) }
        if let v = o["advertising"] { d.advertising = try advertising(v, "$.advertising") }
        let serviceList = try o["services"].map { v throws(Failure) in try array(v, "$.services") } ?? []
        // Ids first, so an include may name a later service.
        var ids: [String: Int] = [:]
        for (i, s) in serviceList.enumerated() {
            guard case .object(let members) = s.kind, let idValue = members.first(where: { $0.key == "id" })?.value else { continue }
            let id = try string(idValue, "$.services[\(i)].id")
            guard ids[id] == nil else { throw fail(idValue, "$.services[\(i)].id", "the id \"\(id)\" is already service \(ids[id] ?? 0)'s") }
            ids[id] = i
        }
        for (i, s) in serviceList.enumerated() {
            d.services.append(try service(s, "$.services[\(i)]", index: i, count: serviceList.count, ids: ids))
        }
        return d
    }

    static func advertising(_ v: PositionedJSON, _ path: String) throws(Failure) -> GATTDeviceDescription.Advertising {
        let o = try object(v, path, allowed: ["name", "services", "manufacturerData", "serviceData", "appearance", "txPower"])
        var a = GATTDeviceDescription.Advertising()
        if let n = o["name"] { a.name = try string(n, path + ".name") }
        if let s = o["services"] {
            for (i, u) in try array(s, path + ".services").enumerated() { a.serviceUUIDs.append(try uuid(u, "\(path).services[\(i)]")) }
        }
        if let m = o["manufacturerData"] {
            for (i, entry) in try array(m, path + ".manufacturerData").enumerated() {
                let p = "\(path).manufacturerData[\(i)]"
                let e = try object(entry, p, allowed: ["company", "data"], required: ["company"])
                let company = try integer(e["company"] ?? entry, p + ".company", 0...0xFFFF, what: "a company identifier")
                let data = try e["data"].map { v throws(Failure) in try value(v, p + ".data") } ?? []
                a.manufacturerData.append(ManufacturerData(companyID: CompanyIdentifier(rawValue: UInt16(company)), data: data))
            }
        }
        if let s = o["serviceData"] {
            for (i, entry) in try array(s, path + ".serviceData").enumerated() {
                let p = "\(path).serviceData[\(i)]"
                let e = try object(entry, p, allowed: ["uuid", "data"], required: ["uuid"])
                let u = try uuid(e["uuid"] ?? entry, p + ".uuid")
                let data = try e["data"].map { v throws(Failure) in try value(v, p + ".data") } ?? []
                a.serviceData.append(GATTDeviceDescription.ServiceData(uuid: u, data: data))
            }
        }
        if let x = o["appearance"] { a.appearance = UInt16(try integer(x, path + ".appearance", 0...0xFFFF, what: "an appearance")) }
        if let x = o["txPower"] { a.txPowerLevel = Int8(try integer(x, path + ".txPower", -127...127, what: "a TX power level")) }
        return a
    }

    static func service(_ v: PositionedJSON, _ path: String, index: Int, count: Int, ids: [String: Int]) throws(Failure) -> GATTDeviceDescription.Service {
        let o = try object(v, path, allowed: ["uuid", "primary", "id", "handle", "endHandle", "includes", "characteristics"], required: ["uuid"])
        var s = GATTDeviceDescription.Service(uuid: try uuid(o["uuid"] ?? v, path + ".uuid"))
        if let x = o["primary"] { s.isPrimary = try bool(x, path + ".primary") }
        if let x = o["id"] { s.id = try string(x, path + ".id") }
        if let x = o["handle"] { s.handle = try handle(x, path + ".handle") }
        if let x = o["endHandle"] { s.endHandle = try handle(x, path + ".endHandle") }
        if let x = o["includes"] {
            for (i, target) in try array(x, path + ".includes").enumerated() {
                let p = "\(path).includes[\(i)]"
                let resolved: Int
                if case .string(let id) = target.kind {
                    guard let found = ids[id] else { throw fail(target, p, "no service has the id \"\(id)\"") }
                    resolved = found
                } else {
                    resolved = try integer(target, p, Int.min...Int.max, what: "a service index or id")
                    guard resolved >= 0, resolved < count else { throw fail(target, p, "service \(resolved) does not exist (there are \(count))") }
                }
                guard resolved != index else { throw fail(target, p, "a service cannot include itself") }
                s.includes.append(resolved)
            }
        }
        if let x = o["characteristics"] {
            for (i, c) in try array(x, path + ".characteristics").enumerated() {
                s.characteristics.append(try characteristic(c, "\(path).characteristics[\(i)]"))
            }
        }
        return s
    }

    static func characteristic(_ v: PositionedJSON, _ path: String) throws(Failure) -> GATTDeviceDescription.Characteristic {
        let o = try object(v, path, allowed: ["uuid", "handle", "valueHandle", "properties", "permissions", "value", "readError", "notify", "descriptors"],
                           required: ["uuid", "properties"])
        let properties = try properties(o["properties"] ?? v, path + ".properties")
        var c = GATTDeviceDescription.Characteristic(uuid: try uuid(o["uuid"] ?? v, path + ".uuid"), properties: properties)
        if let x = o["permissions"] { c.permissions = try permissions(x, path + ".permissions") }
        if let x = o["handle"] { c.handle = try handle(x, path + ".handle") }
        if let x = o["valueHandle"] { c.valueHandle = try handle(x, path + ".valueHandle") }
        if let x = o["value"] { c.value = try value(x, path + ".value") }
        if let x = o["readError"] { c.readError = try readError(x, path + ".readError") }
        if let x = o["notify"] {
            let p = path + ".notify"
            guard !properties.isDisjoint(with: [.notify, .indicate]) else {
                throw fail(x, p, "a notify timer needs the notify or indicate property")
            }
            let n = try object(x, p, allowed: ["everyMs", "values"], required: ["everyMs", "values"])
            let every = try integer(n["everyMs"] ?? x, p + ".everyMs", 10...3_600_000, what: "an interval in milliseconds")
            let list = try array(n["values"] ?? x, p + ".values")
            guard !list.isEmpty else { throw fail(n["values"] ?? x, p + ".values", "give at least one value") }
            var values: [[UInt8]] = []
            for (i, item) in list.enumerated() { values.append(try value(item, "\(p).values[\(i)]")) }
            c.notify = GATTDeviceDescription.NotifyTimer(intervalMilliseconds: every, values: values)
        }
        if let x = o["descriptors"] {
            for (i, d) in try array(x, path + ".descriptors").enumerated() {
                let p = "\(path).descriptors[\(i)]"
                let m = try object(d, p, allowed: ["uuid", "handle", "value", "permissions", "readError"], required: ["uuid"])
                var descriptor = GATTDeviceDescription.Descriptor(uuid: try uuid(m["uuid"] ?? d, p + ".uuid"))
                if let y = m["handle"] { descriptor.handle = try handle(y, p + ".handle") }
                if let y = m["value"] {
                    guard descriptor.uuid != BluetoothUUID(0x2902) else {
                        throw fail(y, p + ".value", "a CCCD's value is each client's own (Core Vol 3, Part G, 3.3.3.3): give none")
                    }
                    descriptor.value = try value(y, p + ".value")
                }
                if let y = m["permissions"] { descriptor.permissions = try permissions(y, p + ".permissions") }
                if let y = m["readError"] { descriptor.readError = try readError(y, p + ".readError") }
                c.descriptors.append(descriptor)
            }
        }
        return c
    }
}

import Foundation

/// One request from the page, decoded from its JSON text and checked before anything acts on it: a request that is
/// not JSON, lacks a member, names an unknown operation, or carries hex that does not parse or a handle out of range
/// is refused with a ``PageRequestError`` that says which, and nothing changes.
///
/// The page sends `{"id": 7, "op": "read", "address": "C0:…", "handle": 12}`: `id` (optional) comes back in the
/// answer so the page can match them.
public struct PageRequest: Sendable, Equatable {
    /// The number the page gave the request, echoed in the answer.
    public var id: Int?
    /// What the page asks.
    public var operation: Operation

    /// What the page may ask.
    public enum Operation: Sendable, Equatable {
        /// Connect to a device the scanner heard (by address, as the scanner showed it).
        case connect(address: String)
        /// Disconnect from it.
        case disconnect(address: String)
        /// Read a characteristic value or a descriptor by handle.
        case read(address: String, handle: UInt16)
        /// Write a characteristic value or a descriptor; `withResponse` false writes without response.
        case write(address: String, handle: UInt16, value: [UInt8], withResponse: Bool)
        /// Subscribe to a characteristic's notifications or indications.
        case subscribe(address: String, handle: UInt16)
        /// Stop them.
        case unsubscribe(address: String, handle: UInt16)
        /// Pair with a connected device (or encrypt with its bond).
        case pair(address: String)
        /// Answer a pairing prompt the server showed: the passkey typed (`nil`: none, the pairing is refused), or the
        /// numeric comparison's answer.
        case pairingAnswer(prompt: Int, passkey: UInt32?, confirmed: Bool)
        /// Ask for a link's PHY (`1M`, `2M` or `Coded`, both directions).
        case setPHY(address: String, phy: String)
        /// Check a GATT JSON text without serving it (the editor, as one types).
        case checkDescription(text: String)
        /// Start one of the simulated devices by name (as `ble serve --device NAME`).
        case startDevice(name: String)
        /// Start the device a GATT JSON text describes (as `ble serve --gatt FILE`).
        case startDescription(text: String)
        /// Start an advertiser (non-connectable): a beacon or custom advertising data.
        case startAdvertiser(Advertiser)
        /// Stop a virtual device this server started.
        case stopDevice(id: Int)
        /// Pause or resume the live HCI trace for this page.
        case trace(paused: Bool)
    }

    /// What an advertiser sends.
    public enum Advertiser: Sendable, Equatable {
        /// An iBeacon: its proximity UUID (as typed; the server parses it), major, minor and measured power (dBm).
        case iBeacon(uuid: String, major: UInt16, minor: UInt16, measuredPower: Int8)
        /// An Eddystone-URL frame.
        case eddystoneURL(url: String, txPower: Int8)
        /// Advertising data given whole: AD structures (length, type, data...).
        case custom(data: [UInt8])
    }

    /// Whether the operation changes something the `--read-only` mode refuses: writes, pairing and virtual devices.
    public var isWrite: Bool {
        switch operation {
        case .write, .pair, .pairingAnswer, .startDevice, .startDescription, .startAdvertiser, .stopDevice: true
        case .connect, .disconnect, .read, .subscribe, .unsubscribe, .setPHY, .checkDescription, .trace: false
        }
    }

    /// A request as built in code.
    public init(id: Int?, operation: Operation) {
        self.id = id
        self.operation = operation
    }

    /// Decodes and checks one message of the page.
    public init(json text: String) throws(PageRequestError) {
        let raw: Raw
        do {
            raw = try JSONDecoder().decode(Raw.self, from: Data(text.utf8))
        } catch let DecodingError.typeMismatch(type, context) {
            throw PageRequestError(Self.place(context) + "must be \(Self.typeName(type))")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw PageRequestError(Self.place(context) + "is not valid")
        } catch {
            // Foundation reports a number that is not an integer (`1.5` for a handle) as invalid JSON, without a
            // path: JSON that parses is then a request with such a number.
            if (try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil {
                throw PageRequestError("a number in the request is not an integer")
            }
            throw PageRequestError("the request is not a JSON object")
        }
        id = raw.id
        let op = try Self.required(raw.op, "op")
        switch op {
        case "connect": operation = .connect(address: try raw.checkedAddress())
        case "disconnect": operation = .disconnect(address: try raw.checkedAddress())
        case "read": operation = .read(address: try raw.checkedAddress(), handle: try raw.checkedHandle())
        case "write":
            let value: [UInt8]
            let given = try Self.required(raw.value, "value")
            switch raw.format ?? "hex" {
            case "hex":
                guard let bytes = HexBytes.parse(given) else {
                    throw PageRequestError("'\(Self.clipped(given))' is not hex (whole bytes: 0-9, a-f)")
                }
                value = bytes
            case "text": value = Array(given.utf8)
            case let other: throw PageRequestError("format must be hex or text, not '\(Self.clipped(other))'")
            }
            operation = .write(address: try raw.checkedAddress(), handle: try raw.checkedHandle(), value: value,
                               withResponse: raw.withResponse ?? true)
        case "subscribe": operation = .subscribe(address: try raw.checkedAddress(), handle: try raw.checkedHandle())
        case "unsubscribe": operation = .unsubscribe(address: try raw.checkedAddress(), handle: try raw.checkedHandle())
        case "pair": operation = .pair(address: try raw.checkedAddress())
        case "pairingAnswer":
            var passkey: UInt32?
            if let typed = raw.passkey {
                guard typed.utf8.count == 6, typed.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let number = UInt32(typed) else {
                    throw PageRequestError("a passkey is six digits, not '\(Self.clipped(typed))'")
                }
                passkey = number
            }
            operation = .pairingAnswer(prompt: try Self.required(raw.prompt, "prompt"), passkey: passkey,
                                       confirmed: raw.confirmed ?? (passkey != nil))
        case "setPHY":
            let phy = try Self.required(raw.phy, "phy")
            guard ["1M", "2M", "Coded"].contains(phy) else { throw PageRequestError("a PHY is 1M, 2M or Coded, not '\(Self.clipped(phy))'") }
            operation = .setPHY(address: try raw.checkedAddress(), phy: phy)
        case "checkDescription": operation = .checkDescription(text: try Self.required(raw.text, "text"))
        case "startDevice": operation = .startDevice(name: try Self.required(raw.name, "name"))
        case "startDescription": operation = .startDescription(text: try Self.required(raw.text, "text"))
        case "startAdvertiser":
            switch try Self.required(raw.kind, "kind") {
            case "ibeacon":
                operation = .startAdvertiser(.iBeacon(uuid: try Self.required(raw.uuid, "uuid"), major: try Self.ranged(raw.major ?? 0, "major", UInt16.self),
                                                      minor: try Self.ranged(raw.minor ?? 0, "minor", UInt16.self),
                                                      measuredPower: try Self.ranged(raw.power ?? -59, "power", Int8.self)))
            case "eddystoneURL":
                operation = .startAdvertiser(.eddystoneURL(url: try Self.required(raw.url, "url"),
                                                           txPower: try Self.ranged(raw.power ?? -18, "power", Int8.self)))
            case "custom":
                let given = try Self.required(raw.value, "value")
                guard let bytes = HexBytes.parse(given), !bytes.isEmpty else {
                    throw PageRequestError("'\(Self.clipped(given))' is not advertising data in hex (length, type, data...)")
                }
                operation = .startAdvertiser(.custom(data: bytes))
            case let other: throw PageRequestError("an advertiser is ibeacon, eddystoneURL or custom, not '\(Self.clipped(other))'")
            }
        case "stopDevice": operation = .stopDevice(id: try Self.required(raw.device, "device"))
        case "trace": operation = .trace(paused: raw.paused ?? false)
        default: throw PageRequestError("unknown operation '\(Self.clipped(op))'")
        }
    }

    /// The `id` of a request that may not decode, so that its refusal can still be matched to it (`nil` when the
    /// text has none, or is not JSON at all).
    public static func id(in text: String) -> Int? {
        struct OnlyID: Decodable { var id: Int? }
        return (try? JSONDecoder().decode(OnlyID.self, from: Data(text.utf8)))?.id
    }

    /// At most 40 characters of page input, for an error message.
    static func clipped(_ text: String) -> String { text.count > 40 ? String(text.prefix(40)) + "…" : text }

    static func required<T>(_ value: T?, _ key: String) throws(PageRequestError) -> T {
        guard let value else { throw PageRequestError("'\(key)' is missing") }
        return value
    }

    /// `value` as `T` when it fits, else an error naming `key` and `T`'s range.
    static func ranged<T: FixedWidthInteger>(_ value: Int, _ key: String, _ type: T.Type) throws(PageRequestError) -> T {
        guard let fitted = T(exactly: value) else { throw PageRequestError("'\(key)' must be within \(T.min)...\(T.max), not \(value)") }
        return fitted
    }

    /// `'handle' ` for a member, empty for the whole request.
    static func place(_ context: DecodingError.Context) -> String {
        context.codingPath.isEmpty ? "the request " : "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' "
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: "an integer"
        case is Bool.Type: "true or false"
        case is String.Type: "a string"
        default: "a JSON object"
        }
    }

    /// The members a request may have, each typed: a member of the wrong JSON type fails the decoding.
    private struct Raw: Decodable {
        var id: Int?
        var op: String?
        var address: String?
        var handle: Int?
        var value: String?
        var format: String?
        var withResponse: Bool?
        var name: String?
        var text: String?
        var device: Int?
        var paused: Bool?
        var prompt: Int?
        var passkey: String?
        var confirmed: Bool?
        var kind: String?
        var uuid: String?
        var major: Int?
        var minor: Int?
        var power: Int?
        var url: String?
        var phy: String?

        func checkedAddress() throws(PageRequestError) -> String {
            let text = try PageRequest.required(address, "address")
            guard !text.isEmpty, text.count <= 64 else { throw PageRequestError("'address' must name a device") }
            return text
        }

        func checkedHandle() throws(PageRequestError) -> UInt16 {
            let value = try PageRequest.required(handle, "handle")
            guard let handle = UInt16(exactly: value), handle > 0 else {
                throw PageRequestError("handle \(value) is not an attribute handle (1-65535)")
            }
            return handle
        }
    }
}

/// Why the page's request was refused (shown in the page as it is).
public struct PageRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in a sentence for the page.
    public let message: String

    /// An error saying `message`.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

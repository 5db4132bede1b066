import ArgumentParser
import BLE
import BLEGateway
import Foundation
import MQTT

/// `ble gateway --mqtt mqtt://HOST:PORT`: what this radio hears, published to an MQTT broker (see BLEGateway).
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Publish what this radio hears to an MQTT broker: device records, room presence, Home Assistant discovery, GATT requests.",
        discussion: """
            Topics (PREFIX defaults to swift-ble, ID to the host name):
              PREFIX/ID/status                  online (retained); offline as the Will and on a clean stop
              PREFIX/ID/devices/ADDRESS         one JSON record per device and change (rate limited by --interval)
              PREFIX/ID/rssi/DEVICE             this gateway's smoothed RSSI (and distance) of a device
              PREFIX/presence/DEVICE            the gateway that hears the device best (retained; hysteresis)
              PREFIX/ID/command                 JSON requests: {"id":"r1","op":"read","device":"NAME","characteristic":"2A29"}
              PREFIX/ID/response/REQUEST-ID     {"id":"r1","ok":true,...} or {"id":"r1","ok":false,"error":{...}}
              PREFIX/ID/notifications/ADDRESS/UUID   values of subscribed characteristics
              PREFIX/ID/stats                   counters (readings, dropped...), retained
              homeassistant/sensor/NODE/OBJECT/config   Home Assistant discovery (retained)
            Connected sensors (--connect): the gateway connects to devices advertising a standard service it reads
            (Heart Rate, Battery, Health Thermometer, Weight Scale, Blood Pressure, Glucose, Body Composition, Current
            Time, Device Information), at most --max-links at a time; it subscribes to what notifies or indicates,
            reads the rest every --read-interval, and publishes the decoded values in the device's record ("values")
            at once when they change. A dropped link is retried after 2 s, a failed attempt with backoff (to 2 min),
            a device that refuses (pairing needed) after 5 min. --connect none: advertisements only.
            SIGINT or SIGTERM publishes offline and disconnects cleanly. A broker that refuses the credentials (bad user
            name or password, not authorized) ends the gateway with exit status 3.
            """)

    @OptionGroup var options: HostOptions

    @Option(help: "The broker: mqtt://HOST[:PORT] (mqtts:// for TLS).")
    var mqtt: String

    @Option(help: "This gateway's identifier in the topics (default: the host name).")
    var id: String?

    @Option(name: .customLong("topic"), help: "The topic prefix shared by the fleet.")
    var prefix: String = "swift-ble"

    @Option(help: "User name for the broker.")
    var user: String?

    @Option(help: "A file whose first line is the broker password.")
    var passwordFile: String?

    @Flag(help: "Connect with TLS (also implied by mqtts://).")
    var tls = false

    @Option(help: "A PEM file of certificate authorities to trust for TLS.")
    var ca: String?

    @Option(help: "Seconds between two records of a device whose content did not change (a change goes out at once).")
    var interval: Double = 5

    @Option(help: "Messages kept while the broker is away (beyond it the oldest are dropped and counted).")
    var queue: Int = 10_000

    @Option(help: "Presence: dB by which another gateway must hear a device better to take it over.")
    var hysteresis: Double = 4

    @Option(help: "Presence: seconds it must stay that much better.")
    var dwell: Double = 3

    @Option(help: "Connect to read profile values: known (devices advertising a standard service the gateway reads), none, or ADDRESS,ADDRESS,...")
    var connect: String = "known"

    @Option(help: "The most devices connected at a time for their values.")
    var maxLinks: Int = 4

    @Option(help: "Seconds between two reads of the values that are not notified.")
    var readInterval: Double = 60

    @Option(help: "Milliseconds what the gateway publishes (records, views, presence) may wait to go out together in one write to the broker; 0 sends each burst of advertisements' at once.")
    var publishDelay: Double = 20

    @Flag(help: "Do not publish Home Assistant discovery configs.")
    var noHomeAssistant = false

    @Flag(help: "Print every device record published.")
    var verbose = false

    func validate() throws {
        guard MQTTBrokerAddress(url: mqtt) != nil else { throw ValidationError("--mqtt \(mqtt): expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT]") }
        if let id { guard Self.isTopicLevel(id) else { throw ValidationError("--id '\(id)' must be non-empty without '/', '+' or '#'") } }
        guard !prefix.isEmpty, !prefix.contains("+"), !prefix.contains("#"), !prefix.hasPrefix("/"), !prefix.hasSuffix("/") else {
            throw ValidationError("--topic '\(prefix)' must be a topic without wildcards or leading/trailing '/'")
        }
        guard interval >= 0, interval.isFinite else { throw ValidationError("--interval must be a number of seconds ≥ 0") }
        guard queue >= 1 else { throw ValidationError("--queue must be at least 1") }
        guard hysteresis >= 0, hysteresis.isFinite, dwell >= 0, dwell.isFinite else { throw ValidationError("--hysteresis and --dwell must be ≥ 0") }
        guard ConnectPolicy(argument: connect) != nil else {
            throw ValidationError("--connect \(connect): expected known, none, or a list of addresses (AA:BB:CC:DD:EE:FF,...)")
        }
        guard maxLinks >= 1 else { throw ValidationError("--max-links must be at least 1") }
        guard readInterval >= 1, readInterval.isFinite else { throw ValidationError("--read-interval must be at least 1 second") }
        guard publishDelay >= 0, publishDelay <= 10_000, publishDelay.isFinite else {
            throw ValidationError("--publish-delay must be a number of milliseconds from 0 to 10,000")
        }
        if passwordFile != nil && user == nil { throw ValidationError("--password-file needs --user") }
    }

    static func isTopicLevel(_ text: String) -> Bool { !text.isEmpty && !text.contains { "/+#".contains($0) } }

    static func seconds(_ value: Double) -> Duration { .milliseconds(Int((value * 1000).rounded())) }

    func run() async throws {
        guard var broker = MQTTBrokerAddress(url: mqtt) else { throw ValidationError("--mqtt \(mqtt): not a broker address") }
        // --tls on mqtt://HOST:PORT keeps the port given (mqtts:// defaults to 8883).
        if tls { broker.usesTLS = true }
        if broker.usesTLS && !MQTTClient.supportsTLS {
            throw CommandFailure.failed("\(broker): this build of ble has no TLS; build it with `swift build --traits TLS` (docs/gateways.md)")
        }
        var password: [UInt8]?
        if let passwordFile {
            do {
                let text = try String(contentsOfFile: passwordFile, encoding: .utf8)
                password = Array((text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "").utf8)
            } catch {
                throw CommandFailure.failed("--password-file \(passwordFile): \(error.localizedDescription)")
            }
        }
        let gatewayID = id ?? Self.hostName()
        let topics = GatewayTopics(prefix: prefix, gatewayID: gatewayID)
        let configuration = Gateway.Configuration(
            topics: topics, broker: broker, tls: MQTTTLSOptions(trustRootsFile: ca), userName: user, password: password,
            interval: Self.seconds(interval), queueLimit: queue,
            presence: .init(hysteresis: hysteresis, dwell: Self.seconds(dwell)), homeAssistant: !noHomeAssistant,
            connect: ConnectPolicy(argument: connect) ?? .known, sensors: .init(maximumLinks: maxLinks),
            readInterval: Self.seconds(readInterval), publishDelay: Self.seconds(publishDelay / 1000), reportsPublications: verbose)
        let json = options.json
        let verbose = verbose
        try await options.withCentral { central in
            let gateway = Gateway(central: central, configuration: configuration)
            emit(json, "gateway \(gatewayID): \(broker), topics \(prefix)/\(gatewayID)/…, scanning on \(options.hci)",
                 ["event": "gateway", "id": .string(gatewayID), "broker": .string(broker.description), "prefix": .string(prefix)])
            let printer = Task {
                for await event in gateway.events {
                    switch event {
                    case .brokerConnected(let count):
                        emit(json, "broker connected (connection \(count)); \(topics.status) = online", ["event": "broker_connected", "count": .int(count)])
                    case .brokerLost(let reason):
                        emit(json, "broker lost: \(reason.escapingControlCharacters)", ["event": "broker_lost", "reason": .string(reason)])
                    case .published(let topic, let record):
                        if verbose { emit(json, "\(topic) \(record.encoded())", ["event": "published", "topic": .string(topic), "record": record]) }
                    case .presence(let decision):
                        emit(json, "presence \(decision.device): \(decision.gateway) (\(decision.json.encoded()))",
                             ["event": "presence", "device": .string(decision.device), "gateway": .string(decision.gateway)])
                    case .answered(let topic, let response):
                        emit(json, "\(topic) \(response.encoded())", ["event": "response", "topic": .string(topic), "response": response])
                    case .sensor(let device, let state, let detail):
                        emit(json, "sensor \(device): \(state) (\(detail.escapingControlCharacters))",
                             ["event": "sensor", "device": .string(device), "state": .string(state), "detail": .string(detail)])
                    case .dropped(let total):
                        emit(json, "broker away: queue full, \(total) message(s) dropped so far", ["event": "dropped", "total": .int(total)])
                    }
                }
            }
            do {
                try await gateway.run()
            } catch let error as GatewayError where error.code == .brokerRefused {
                await cleanUp { await gateway.shutdown() }
                printer.cancel()
                // Exit status 3, as for any protocol refusal: retrying with the same credentials cannot help.
                throw CommandFailure(.refused,
                                     "\(error.reason)\(user == nil ? "" : " (user '\(user ?? "")'; check --user and --password-file)")")
            } catch {
                await cleanUp { await gateway.shutdown() }
                printer.cancel()
                throw error
            }
            await cleanUp { await gateway.shutdown() }
            await printer.value
            emit(json, "gateway \(gatewayID): \(topics.status) = offline, disconnected", ["event": "stopped", "id": .string(gatewayID)])
        }
    }

    static func hostName() -> String {
        let name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "gateway"
        return isTopicLevel(name) ? name : "gateway"
    }
}

import BLEWeb
import Testing

@Suite struct WebAccessTests {
    let access = WebAccess(token: "s3cret-token-0123456789")

    @Test func withoutATokenEverythingIsAllowed() {
        #expect(WebAccess(token: nil).decide(uri: "/", cookies: []) == .allowed)
        #expect(WebAccess(token: nil).decide(uri: "/?token=whatever", cookies: []) == .allowed)
    }

    @Test func aRequestWithoutTheTokenIsDenied() {
        #expect(access.decide(uri: "/", cookies: []) == .denied)
        #expect(access.decide(uri: "/app.js", cookies: ["other=1"]) == .denied)
        #expect(access.decide(uri: "/?token=s3cret-token-012345678", cookies: []) == .denied)   // one character short
        #expect(access.decide(uri: "/?token=", cookies: []) == .denied)
        #expect(access.decide(uri: "/", cookies: ["ble_web_token=s3cret-token-0123456788"]) == .denied)
    }

    @Test func theQueryTokenSetsTheCookieAndLeavesTheAddress() {
        #expect(access.decide(uri: "/?token=s3cret-token-0123456789", cookies: [])
            == .redirect(location: "/", setCookie: "ble_web_token=s3cret-token-0123456789; Path=/; HttpOnly; SameSite=Strict"))
        guard case .redirect(let location, _) = access.decide(uri: "/x?a=1&token=s3cret-token-0123456789&b=2", cookies: []) else {
            Issue.record("expected a redirect")
            return
        }
        #expect(location == "/x?a=1&b=2")
    }

    @Test func theCookieIsAccepted() {
        #expect(access.decide(uri: "/ws", cookies: ["theme=dark; ble_web_token=s3cret-token-0123456789"]) == .allowed)
        #expect(access.decide(uri: "/", cookies: ["a=b", "ble_web_token=s3cret-token-0123456789"]) == .allowed)
    }

    @Test func theOriginMustBeThePageItself() {
        #expect(WebAccess.originMatches(origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080"))
        #expect(WebAccess.originMatches(origin: "http://LOCALHOST:8080", host: "localhost:8080"))
        #expect(!WebAccess.originMatches(origin: "http://evil.example", host: "127.0.0.1:8080"))
        #expect(!WebAccess.originMatches(origin: "http://127.0.0.1:8081", host: "127.0.0.1:8080"))
        #expect(!WebAccess.originMatches(origin: nil, host: "127.0.0.1:8080"))
        #expect(!WebAccess.originMatches(origin: "http://127.0.0.1:8080", host: nil))
        #expect(!WebAccess.originMatches(origin: "null", host: "127.0.0.1:8080"))
    }

    @Test func listenAddresses() {
        #expect(WebListenAddress(parsing: "127.0.0.1:8080") == WebListenAddress(host: "127.0.0.1", port: 8080))
        #expect(WebListenAddress(parsing: "[::1]:0") == WebListenAddress(host: "::1", port: 0))
        #expect(WebListenAddress(parsing: "0.0.0.0:80")?.isLoopback == false)
        #expect(WebListenAddress(parsing: "localhost:9")?.isLoopback == true)
        #expect(WebListenAddress(parsing: "[::1]:1")?.isLoopback == true)
        #expect(WebListenAddress(parsing: "127.0.0.1") == nil)
        #expect(WebListenAddress(parsing: "127.0.0.1:65536") == nil)
        #expect(WebListenAddress(parsing: ":8080") == nil)
        #expect(WebListenAddress(parsing: "::1:8080") == nil)
        #expect(WebListenAddress(parsing: "[::1]8080") == nil)
        #expect(WebListenAddress(host: "::1", port: 5).description == "[::1]:5")
    }

    @Test func hex() {
        #expect(HexBytes.parse("01a0FF") == [0x01, 0xA0, 0xFF])
        #expect(HexBytes.parse("01 a0:ff-00") == [0x01, 0xA0, 0xFF, 0x00])
        #expect(HexBytes.parse("") == [])
        #expect(HexBytes.parse("0") == nil)
        #expect(HexBytes.parse("zz") == nil)
        #expect(HexBytes.parse("é1") == nil)
        #expect(HexBytes.string([0x00, 0xAB]) == "00ab")
    }
}

@Suite struct PageRequestTests {
    @Test func wellFormedRequests() throws {
        #expect(try PageRequest(json: #"{"id":3,"op":"read","address":"C0:00:00:00:00:01","handle":12}"#)
            == PageRequest(id: 3, operation: .read(address: "C0:00:00:00:00:01", handle: 12)))
        #expect(try PageRequest(json: #"{"op":"write","address":"A","handle":65535,"value":"01 02"}"#).operation
            == .write(address: "A", handle: 65535, value: [1, 2], withResponse: true))
        #expect(try PageRequest(json: #"{"op":"write","address":"A","handle":3,"value":"hé","format":"text","withResponse":false}"#).operation
            == .write(address: "A", handle: 3, value: Array("hé".utf8), withResponse: false))
        #expect(try PageRequest(json: #"{"op":"stopDevice","device":2}"#).operation == .stopDevice(id: 2))
        #expect(try PageRequest(json: #"{"op":"trace","paused":true}"#).operation == .trace(paused: true))
        #expect(try PageRequest(json: #"{"op":"pairingAnswer","prompt":4,"passkey":"012345"}"#).operation
            == .pairingAnswer(prompt: 4, passkey: 12345, confirmed: true))
        #expect(try PageRequest(json: #"{"op":"pairingAnswer","prompt":5,"confirmed":false}"#).operation
            == .pairingAnswer(prompt: 5, passkey: nil, confirmed: false))
        #expect(try PageRequest(json: #"{"op":"pair","address":"A"}"#).isWrite)
        #expect(try PageRequest(json: #"{"op":"setPHY","address":"A","phy":"2M"}"#).operation == .setPHY(address: "A", phy: "2M"))
        #expect(try !PageRequest(json: #"{"op":"checkDescription","text":"{}"}"#).isWrite)
        #expect(try PageRequest(json: #"{"op":"startAdvertiser","kind":"ibeacon","uuid":"U","major":1,"minor":65535,"power":-60}"#).operation
            == .startAdvertiser(.iBeacon(uuid: "U", major: 1, minor: 65535, measuredPower: -60)))
        #expect(try PageRequest(json: #"{"op":"startAdvertiser","kind":"custom","value":"02 01 06"}"#).operation
            == .startAdvertiser(.custom(data: [2, 1, 6])))
        #expect(try PageRequest(json: #"{"op":"startAdvertiser","kind":"eddystoneURL","url":"https://x.org"}"#).operation
            == .startAdvertiser(.eddystoneURL(url: "https://x.org", txPower: -18)))
        #expect(try PageRequest(json: #"{"op":"startDevice","name":"lab"}"#).isWrite)
        #expect(try !PageRequest(json: #"{"op":"subscribe","address":"A","handle":4}"#).isWrite)
    }

    @Test func theIDOfARefusedRequest() {
        #expect(PageRequest.id(in: #"{"id":9,"op":"write","value":"zz"}"#) == 9)
        #expect(PageRequest.id(in: #"{"op":"trace"}"#) == nil)
        #expect(PageRequest.id(in: "{") == nil)
    }

    /// Each bad request and the message the page shows.
    @Test(arguments: [
        ("not json", "the request is not a JSON object"),
        ("[1,2]", "the request must be a JSON object"),
        (#"{"op":"read","address":"A","handle":0}"#, "handle 0 is not an attribute handle (1-65535)"),
        (#"{"op":"read","address":"A","handle":70000}"#, "handle 70000 is not an attribute handle (1-65535)"),
        (#"{"op":"read","address":"A","handle":"12"}"#, "'handle' must be an integer"),
        (#"{"op":"read","address":"A","handle":1.5}"#, "a number in the request is not an integer"),
        (#"{"op":"read","address":"A"}"#, "'handle' is missing"),
        (#"{"op":"read","handle":1}"#, "'address' is missing"),
        (#"{"op":"write","address":"A","handle":1,"value":"0g"}"#, "'0g' is not hex (whole bytes: 0-9, a-f)"),
        (#"{"op":"write","address":"A","handle":1,"value":"abc"}"#, "'abc' is not hex (whole bytes: 0-9, a-f)"),
        (#"{"op":"write","address":"A","handle":1,"value":"00","format":"base64"}"#, "format must be hex or text, not 'base64'"),
        (#"{"op":"explode"}"#, "unknown operation 'explode'"),
        (#"{"id":true,"op":"trace"}"#, "'id' must be an integer"),
        (#"{"op":"trace","paused":1}"#, "'paused' must be true or false"),
        (#"{}"#, "'op' is missing"),
        (#"{"op":"pairingAnswer","prompt":1,"passkey":"12345"}"#, "a passkey is six digits, not '12345'"),
        (#"{"op":"pairingAnswer","prompt":1,"passkey":"12345x"}"#, "a passkey is six digits, not '12345x'"),
        (#"{"op":"pairingAnswer","prompt":1,"passkey":"１２３４５６"}"#, "a passkey is six digits, not '１２３４５６'"),
        (#"{"op":"pairingAnswer","passkey":"123456"}"#, "'prompt' is missing"),
        (#"{"op":"startAdvertiser","kind":"ibeacon","uuid":"U","minor":65536}"#, "'minor' must be within 0...65535, not 65536"),
        (#"{"op":"startAdvertiser","kind":"ibeacon","uuid":"U","power":-129}"#, "'power' must be within -128...127, not -129"),
        (#"{"op":"startAdvertiser","kind":"custom","value":""}"#, "'' is not advertising data in hex (length, type, data...)"),
        (#"{"op":"setPHY","address":"A","phy":"3M"}"#, "a PHY is 1M, 2M or Coded, not '3M'"),
        (#"{"op":"startAdvertiser","kind":"laser"}"#, "an advertiser is ibeacon, eddystoneURL or custom, not 'laser'"),
    ])
    func badRequestsSayWhy(text: String, message: String) {
        #expect(throws: PageRequestError(message)) { try PageRequest(json: text) }
    }
}

@Suite struct CoalescerTests {
    @Test func keepsTheNewestPerKeyAndFlushesAtMostOncePerInterval() {
        var c = Coalescer<String, Int>(interval: .milliseconds(100))
        #expect(c.flush(now: .zero).isEmpty)   // nothing pending
        c.offer("a", 1)
        c.offer("b", 2)
        c.offer("a", 3)
        let first = c.flush(now: .milliseconds(5))
        #expect(first.map(\.key) == ["a", "b"])
        #expect(first.map(\.value) == [3, 2])
        c.offer("b", 4)
        #expect(c.flush(now: .milliseconds(104)).isEmpty)   // 99 ms after the last flush
        #expect(c.pendingCount == 1)
        #expect(c.flush(now: .milliseconds(105)).map(\.value) == [4])
        #expect(c.earliestNextFlush == .milliseconds(205))
    }

    @Test func aThousandUpdatesASecondBecomeTenFlushes() {
        var c = Coalescer<Int, Int>(interval: .milliseconds(100))
        var flushes = 0, delivered = 0
        for ms in 0..<1000 {
            c.offer(ms % 50, ms)
            let out = c.flush(now: .milliseconds(ms))
            if !out.isEmpty { flushes += 1; delivered += out.count }
        }
        #expect(flushes == 10)
        #expect(delivered <= 10 * 50)
    }
}

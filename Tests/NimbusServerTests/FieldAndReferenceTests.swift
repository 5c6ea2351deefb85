import Foundation
import NimbusProtocol
import NimbusTestSupport
import Testing

@Suite("Field types and references")
struct FieldAndReferenceTests {
    @Test(arguments: Engine.available) func everyFieldTypeRoundTripsWithItsType(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let fields: JSON = [
                "s": ["value": "text", "type": "STRING"],
                "i": ["value": .number("-9223372036854775808"), "type": "INT64"],
                "imax": ["value": .number("9223372036854775807"), "type": "INT64"],
                "d": ["value": .number("3.25"), "type": "DOUBLE"],
                "t": ["value": .number("1700000000123"), "type": "TIMESTAMP"],
                "b": ["value": .string(Data([0, 1, 2, 255]).base64EncodedString()), "type": "BYTES"],
                "l": ["value": ["latitude": .number("52.5"), "longitude": .number("13.4")], "type": "LOCATION"],
                "r": ["value": ["recordName": "other", "action": "NONE"], "type": "REFERENCE"],
                "sl": ["value": ["a", "b"], "type": "STRING_LIST"],
                "il": ["value": [1, 2], "type": "INT64_LIST"],
                "dl": ["value": [.number("1.5")], "type": "DOUBLE_LIST"],
                "tl": ["value": [.number("1")], "type": "TIMESTAMP_LIST"],
                "bl": ["value": ["AAE="], "type": "BYTES_LIST"],
                "ll": ["value": [["latitude": 1, "longitude": 2]], "type": "LOCATION_LIST"],
                "rl": ["value": [["recordName": "x"]], "type": "REFERENCE_LIST"],
                "empty": ["value": [], "type": "STRING_LIST"],
            ]
            let reply = try await alice.post(
                "records/modify",
                [
                    "zoneID": ["zoneName": "Z"],
                    "operations": [
                        ["operationType": "create", "record": ["recordName": "all", "recordType": "T", "fields": fields]]
                    ],
                ])
            let stored = try #require(reply.records.first?["fields"]?.object)
            for (name, field) in fields.object! {
                #expect(stored[name]?["type"] == field["type"], "type of \(name)")
            }
            #expect(stored["imax"]?["value"] == .number("9223372036854775807"))
            #expect(stored["i"]?["value"] == .number("-9223372036854775808"))
            #expect(stored["b"]?["value"] == .string(Data([0, 1, 2, 255]).base64EncodedString()))
            #expect(stored["l"]?["value"]?["latitude"]?.double == 52.5)
            #expect(stored["empty"]?["value"] == [])

            // numbersAsStrings: INT64 values come back as strings.
            let strings = try await alice.post(
                "records/lookup",
                ["zoneID": ["zoneName": "Z"], "numbersAsStrings": true, "records": [["recordName": "all"]]])
            #expect(strings.records.first?["fields"]?["imax"]?["value"] == "9223372036854775807")
        }
    }

    @Test(arguments: Engine.available) func valuesWithoutTypeAreInferredAndResponsesCarryTheType(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let reply = try await alice.post(
                "records/modify",
                [
                    "zoneID": ["zoneName": "Z"],
                    "operations": [
                        [
                            "operationType": "create",
                            "record": [
                                "recordName": "r", "recordType": "T",
                                "fields": [
                                    "s": ["value": "x"], "i": ["value": 5], "d": ["value": .number("2.5")],
                                    "ref": ["value": ["recordName": "other"]], "list": ["value": ["a", "b"]],
                                    "loc": ["value": ["latitude": 1, "longitude": 2]],
                                ],
                            ],
                        ]
                    ],
                ])
            let fields = try #require(reply.records.first?["fields"]?.object)
            #expect(fields["s"]?["type"] == "STRING")
            #expect(fields["i"]?["type"] == "INT64")
            #expect(fields["d"]?["type"] == "DOUBLE")
            #expect(fields["ref"]?["type"] == "REFERENCE")
            #expect(fields["list"]?["type"] == "STRING_LIST")
            #expect(fields["loc"]?["type"] == "LOCATION")
        }
    }

    @Test(arguments: Engine.available) func int64AcceptsNumbersAsStringsOnInput(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let reply = try await alice.post(
                "records/modify",
                [
                    "zoneID": ["zoneName": "Z"], "numbersAsStrings": true,
                    "operations": [
                        [
                            "operationType": "create",
                            "record": [
                                "recordName": "r", "recordType": "T",
                                "fields": ["big": ["value": "9007199254740993", "type": "INT64"]],
                            ],
                        ]
                    ],
                ])
            #expect(reply.records.first?["fields"]?["big"]?["value"] == "9007199254740993")
        }
    }

    @Test(arguments: Engine.available) func deleteSelfReferencesCascadeAndShowAsDeletedInChanges(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "parent")])
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            let child: JSON = [
                "operationType": "create",
                "record": [
                    "recordName": "child", "recordType": "Item",
                    "fields": ["parent": ["value": ["recordName": "parent", "action": "DELETE_SELF"], "type": "REFERENCE"]],
                ],
            ]
            let grandchild: JSON = [
                "operationType": "create",
                "record": [
                    "recordName": "grandchild", "recordType": "Item",
                    "fields": ["parent": ["value": ["recordName": "child", "action": "DELETE_SELF"]]],
                ],
            ]
            _ = try await alice.modify("Z", [child, grandchild, op("create", "bystander")])
            let changesToken = try #require(try await alice.changes("Z", since: token)["syncToken"]?.string)
            let deleted = try await alice.modify("Z", [op("forceDelete", "parent")])
            #expect(deleted.records.count == 1)

            let delta = try await alice.changes("Z", since: changesToken)
            let names = Set(delta.records.compactMap { $0["deleted"] == true ? $0["recordName"]?.string : nil })
            #expect(names == ["parent", "child", "grandchild"])
            let lookup = try await alice.post(
                "records/lookup",
                ["zoneID": ["zoneName": "Z"], "records": [["recordName": "child"], ["recordName": "bystander"]]])
            #expect(lookup.records[0]["serverErrorCode"] == "NOT_FOUND")
            #expect(lookup.records[1]["serverErrorCode"] == nil)
        }
    }

    @Test(arguments: Engine.available) func validateReferenceToAMissingRecordIsRejected(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            func child(_ target: String) -> JSON {
                [
                    "operationType": "create",
                    "record": [
                        "recordName": .string("child-\(target)"), "recordType": "Item",
                        "fields": ["owner": ["value": ["recordName": .string(target), "action": "VALIDATE"]]],
                    ],
                ]
            }
            let rejected = try await alice.modify("Z", [child("ghost")])
            #expect(rejected.records.first?["serverErrorCode"] == "VALIDATING_REFERENCE_ERROR")
            // A target created earlier in the same request counts.
            let accepted = try await alice.modify("Z", [op("create", "real"), child("real")])
            #expect(accepted.records.allSatisfy { $0["serverErrorCode"] == nil })
        }
    }
}

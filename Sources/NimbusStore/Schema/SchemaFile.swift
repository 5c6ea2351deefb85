import Foundation
import NimbusProtocol

/// The text form of a ``ContainerSchema``: CloudKit's schema language, as `cktool
/// export-schema` writes it and `nimbus schema export` / `nimbus schema deploy` read and
/// write it.
///
/// ```
/// DEFINE SCHEMA
///
///     RECORD TYPE Article (
///         "___createTime" TIMESTAMP SORTABLE,
///         "___createdBy"  REFERENCE,
///         "___etag"       STRING,
///         "___modTime"    TIMESTAMP,
///         "___modifiedBy" REFERENCE,
///         "___recordID"   REFERENCE QUERYABLE,
///         order           INT64 QUERYABLE SORTABLE,
///         tags            LIST<STRING> QUERYABLE,
///         title           STRING QUERYABLE SEARCHABLE SORTABLE,
///         GRANT WRITE TO "_creator",
///         GRANT CREATE TO "_icloud",
///         GRANT READ TO "_world"
///     );
/// ```
///
/// Field types are `STRING`, `INT64`, `DOUBLE`, `TIMESTAMP`, `BYTES`, `REFERENCE`,
/// `LOCATION`, `ASSET`, `LIST<…>` of them, and `ENCRYPTED_BYTES` (ASSET, BYTES and
/// ENCRYPTED_BYTES fields take no index); indexes `QUERYABLE`, `SEARCHABLE`, `SORTABLE`; each
/// `GRANT READ|CREATE|WRITE[, …] TO role` gives records of the type to a role in the public
/// database (`_world`, `_icloud`, `_creator`, or one declared with `CREATE ROLE name;`).
/// `//` starts a comment. The text Nimbus writes is canonical: types, fields and roles sorted,
/// so exports diff cleanly.
///
/// The document the engines store adds, after the roles, who holds each of them in the
/// environment (``ContainerSchema/roleMembers``), one Nimbus statement per user:
/// `GRANT ROLE editors TO USER "_3f0c…";`. Exports leave these out (``cloudKitText(of:)``).
public enum SchemaFile {
    /// The schema as the engines store it: CloudKit's schema language and the role members.
    public static func text(of schema: ContainerSchema) -> String {
        var out = "DEFINE SCHEMA\n"
        for role in schema.roles.sorted() {
            out += "\n    CREATE ROLE \(quoted(role));\n"
        }
        for role in schema.roleMembers.keys.sorted() {
            for user in schema.roleMembers[role]!.sorted() {
                out += "    GRANT ROLE \(quoted(role)) TO USER \"\(user)\";\n"
            }
        }
        for name in schema.recordTypes.keys.sorted() {
            let type = schema.recordTypes[name]!
            var lines: [(name: String, rest: String)] = []
            let system: [(String, String, QueryFilter.SystemField?)] = [
                ("___createTime", "TIMESTAMP", .createdTimestamp), ("___createdBy", "REFERENCE", .createdUserRecordName),
                ("___etag", "STRING", nil), ("___modTime", "TIMESTAMP", .modifiedTimestamp),
                ("___modifiedBy", "REFERENCE", .modifiedUserRecordName), ("___recordID", "REFERENCE", .recordName),
            ]
            for (fieldName, typeName, field) in system {
                let indexes = field.map { type.systemIndexes[$0] ?? [] } ?? []
                lines.append((quoted(fieldName), ([typeName] + indexes.sorted().map(\.rawValue)).joined(separator: " ")))
            }
            for fieldName in type.fields.keys.sorted() {
                let field = type.fields[fieldName]!
                lines.append(
                    (quoted(fieldName), ([typeName(field.type)] + field.indexes.sorted().map(\.rawValue)).joined(separator: " ")))
            }
            let width = lines.map(\.name.count).max() ?? 0
            var members = lines.map { $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + " " + $0.rest }
            members += type.grants.map { "GRANT \($0.permission.rawValue) TO \"\($0.role)\"" }
            out += "\n    RECORD TYPE \(quoted(name)) (\n"
            out += members.map { "        " + $0 }.joined(separator: ",\n")
            out += "\n    );\n"
        }
        return out
    }

    /// The schema in CloudKit's schema language only, as `cktool export-schema` writes it:
    /// what `nimbus schema export` and the dashboard show; who holds a role is left out.
    public static func cloudKitText(of schema: ContainerSchema) -> String {
        var definition = schema
        definition.roleMembers = [:]
        return text(of: definition)
    }

    /// Parses schema text.
    /// - Throws: BAD_REQUEST naming the line and what was expected.
    public static func parse(_ text: String) throws(CloudKitError) -> ContainerSchema {
        var parser = Parser(tokens: try tokenize(text))
        return try parser.schema()
    }

    static func typeName(_ type: FieldType) -> String {
        type.elementType.map { "LIST<\($0.rawValue)>" } ?? type.rawValue
    }

    /// A name as the schema language writes it: bare when it is a plain identifier that is
    /// not a keyword, quoted otherwise.
    static func quoted(_ name: String) -> String {
        let plain =
            name.first.map { $0.isASCII && ($0.isLetter || $0 == "_") } == true
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            && !name.hasPrefix("___") && !keywords.contains(name.uppercased())
        return plain ? name : "\"\(name)\""
    }

    private static let keywords = Set([
        "DEFINE", "SCHEMA", "RECORD", "TYPE", "GRANT", "TO", "CREATE", "ROLE", "READ", "WRITE", "LIST",
        "QUERYABLE", "SEARCHABLE", "SORTABLE",
    ]).union(FieldType.allCases.map(\.rawValue))

    // MARK: - Parsing

    struct Token: Equatable {
        enum Kind: Equatable {
            case word
            case quoted
            case symbol
        }
        var kind: Kind
        var text: String
        var line: Int
    }

    static func tokenize(_ text: String) throws(CloudKitError) -> [Token] {
        var tokens: [Token] = []
        let scalars = Array(text.unicodeScalars)
        var index = 0
        var line = 1
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\n" {
                line += 1
                index += 1
            } else if scalar.properties.isWhitespace {
                index += 1
            } else if scalar == "/", index + 1 < scalars.count, scalars[index + 1] == "/" {
                while index < scalars.count, scalars[index] != "\n" { index += 1 }
            } else if scalar == "\"" {
                var value = String.UnicodeScalarView()
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\n" { break }
                    value.append(scalars[index])
                    index += 1
                }
                guard index < scalars.count, scalars[index] == "\"" else {
                    throw .badRequest("schema line \(line): unterminated quoted name")
                }
                index += 1
                tokens.append(Token(kind: .quoted, text: String(value), line: line))
            } else if "(),;<>".unicodeScalars.contains(scalar) {
                tokens.append(Token(kind: .symbol, text: String(scalar), line: line))
                index += 1
            } else if scalar.properties.isAlphabetic || scalar == "_" || ("0"..."9").contains(scalar) || scalar == "." {
                var value = String.UnicodeScalarView()
                while index < scalars.count,
                    scalars[index].properties.isAlphabetic || scalars[index] == "_" || scalars[index] == "."
                        || ("0"..."9").contains(scalars[index])
                {
                    value.append(scalars[index])
                    index += 1
                }
                tokens.append(Token(kind: .word, text: String(value), line: line))
            } else {
                throw .badRequest("schema line \(line): unexpected character '\(scalar)'")
            }
        }
        return tokens
    }

    struct Parser {
        var tokens: [Token]
        var index = 0

        var line: Int { index < tokens.count ? tokens[index].line : (tokens.last?.line ?? 1) }

        func fail(_ message: String) -> CloudKitError {
            let found = index < tokens.count ? "'\(tokens[index].text)'" : "the end of the file"
            return .badRequest("schema line \(line): expected \(message), found \(found)")
        }

        func peekKeyword(_ keyword: String) -> Bool {
            index < tokens.count && tokens[index].kind == .word && tokens[index].text.uppercased() == keyword
        }

        mutating func keyword(_ keyword: String) throws(CloudKitError) {
            guard peekKeyword(keyword) else { throw fail(keyword) }
            index += 1
        }

        mutating func symbol(_ symbol: String) throws(CloudKitError) {
            guard index < tokens.count, tokens[index].kind == .symbol, tokens[index].text == symbol else {
                throw fail("'\(symbol)'")
            }
            index += 1
        }

        func peekSymbol(_ symbol: String) -> Bool {
            index < tokens.count && tokens[index].kind == .symbol && tokens[index].text == symbol
        }

        mutating func name(_ what: String) throws(CloudKitError) -> String {
            guard index < tokens.count, tokens[index].kind != .symbol else { throw fail(what) }
            defer { index += 1 }
            return tokens[index].text
        }

        mutating func schema() throws(CloudKitError) -> ContainerSchema {
            var schema = ContainerSchema()
            try keyword("DEFINE")
            try keyword("SCHEMA")
            while index < tokens.count {
                if peekKeyword("GRANT") {
                    index += 1
                    try roleMember(into: &schema)
                } else if peekKeyword("CREATE") {
                    index += 1
                    try keyword("ROLE")
                    let role = try name("a role name")
                    guard !schema.roles.contains(role) else {
                        throw .badRequest("schema line \(line): role '\(role)' is declared twice")
                    }
                    schema.roles.append(role)
                    try symbol(";")
                } else if peekKeyword("RECORD") {
                    index += 1
                    try keyword("TYPE")
                    let typeLine = line
                    let typeName = try name("a record type name")
                    guard schema.recordTypes[typeName] == nil else {
                        throw .badRequest("schema line \(typeLine): record type '\(typeName)' is defined twice")
                    }
                    schema.recordTypes[typeName] = try recordType(typeName)
                    try symbol(";")
                } else {
                    throw fail("CREATE ROLE or RECORD TYPE")
                }
            }
            for role in schema.roleMembers.keys where !schema.roles.contains(role) {
                throw .badRequest("schema: role '\(role)' is granted to users but not declared; declare it with CREATE ROLE")
            }
            for (typeName, type) in schema.recordTypes {
                for grant in type.grants where !grant.role.hasPrefix("_") && !schema.roles.contains(grant.role) {
                    throw .badRequest(
                        "schema: record type '\(typeName)' grants \(grant.permission.rawValue) to the undeclared role "
                            + "'\(grant.role)'; declare it with CREATE ROLE")
                }
            }
            return schema
        }

        /// `ROLE name TO USER "userRecordName";` after `GRANT`: one holder of a role.
        mutating func roleMember(into schema: inout ContainerSchema) throws(CloudKitError) {
            try keyword("ROLE")
            let role = try name("a role name")
            try keyword("TO")
            try keyword("USER")
            guard index < tokens.count, tokens[index].kind == .quoted, !tokens[index].text.isEmpty else {
                throw fail("a quoted user record name")
            }
            schema.roleMembers[role, default: []].insert(tokens[index].text)
            index += 1
            try symbol(";")
        }

        mutating func recordType(_ typeName: String) throws(CloudKitError) -> RecordTypeSchema {
            var type = RecordTypeSchema(grants: [])
            try symbol("(")
            repeat {
                if peekSymbol(")") { break }
                if peekKeyword("GRANT") {
                    index += 1
                    var permissions: [Grant.Permission] = []
                    repeat {
                        let word = try name("READ, CREATE or WRITE")
                        guard let permission = Grant.Permission(rawValue: word.uppercased()) else {
                            index -= 1
                            throw fail("READ, CREATE or WRITE")
                        }
                        permissions.append(permission)
                    } while try consume(",")
                    try keyword("TO")
                    let role = try name("a role")
                    for permission in permissions where !type.grants.contains(Grant(permission, to: role)) {
                        type.grants.append(Grant(permission, to: role))
                    }
                    continue
                }
                let fieldLine = line
                let fieldName = try name("a field name or GRANT")
                let fieldType = try self.fieldType()
                var indexes = Set<IndexKind>()
                while index < tokens.count, tokens[index].kind == .word,
                    let kind = IndexKind(rawValue: tokens[index].text.uppercased())
                {
                    indexes.insert(kind)
                    index += 1
                }
                try add(field: fieldName, type: fieldType, indexes: indexes, to: &type, typeName: typeName, line: fieldLine)
            } while try consume(",")
            try symbol(")")
            return type
        }

        mutating func consume(_ symbol: String) throws(CloudKitError) -> Bool {
            guard peekSymbol(symbol) else { return false }
            index += 1
            return true
        }

        /// `STRING`, `ASSET`, `LIST<INT64>`, …
        mutating func fieldType() throws(CloudKitError) -> FieldType {
            let word = try name("a field type").uppercased()
            if word == "LIST" {
                try symbol("<")
                let element = try fieldType()
                try symbol(">")
                guard let list = element.listType else {
                    throw .badRequest("schema line \(line): LIST<\(element.rawValue)> is not a field type")
                }
                return list
            }
            guard let type = FieldType(rawValue: word), !type.isList else {
                index -= 1
                throw fail("a field type (STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, LOCATION, ASSET, ENCRYPTED_BYTES or LIST<…>)")
            }
            return type
        }

        func add(
            field: String, type fieldType: FieldType, indexes: Set<IndexKind>, to type: inout RecordTypeSchema,
            typeName: String, line: Int
        ) throws(CloudKitError) {
            if field.hasPrefix("___") {
                guard let system = SchemaFile.systemFields[field] else {
                    throw .badRequest("schema line \(line): '\(field)' is not a system field")
                }
                guard fieldType == system.type else {
                    throw .badRequest("schema line \(line): system field '\(field)' is \(system.type.rawValue)")
                }
                if let target = system.field, !indexes.isEmpty { type.systemIndexes[target] = indexes }
                return
            }
            guard type.fields[field] == nil else {
                throw .badRequest("schema line \(line): field '\(field)' of '\(typeName)' is defined twice")
            }
            try SchemaRules.checkIndexes(indexes, field: field, type: fieldType, recordType: typeName)
            type.fields[field] = FieldSchema(type: fieldType, indexes: indexes)
        }
    }

    /// The system fields a record type lists, their types, and the query target each stands for.
    static let systemFields: [String: (type: FieldType, field: QueryFilter.SystemField?)] = [
        "___createTime": (.timestamp, .createdTimestamp), "___createdBy": (.reference, .createdUserRecordName),
        "___etag": (.string, nil), "___modTime": (.timestamp, .modifiedTimestamp),
        "___modifiedBy": (.reference, .modifiedUserRecordName), "___recordID": (.reference, .recordName),
    ]
}

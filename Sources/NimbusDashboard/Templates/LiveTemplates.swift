import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The live page and the audit log.
enum LiveTemplates {
    static let all: [String: String] = ["live": live, "audit": audit]

    static let live = """
        {{<layout}}{{$body}}
        <h1>Live</h1>
        <p class="muted">This node: {{node}} · {{engine}} · the last {{window}} seconds, updated every second.</p>
        <div class="cards" id="live">
        {{#numbers}}<div class="card"><div class="muted">{{label}}</div><div class="big" data-live="{{key}}">{{value}}</div></div>{{/numbers}}
        </div>
        <h2>Requests per second by operation</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col">Operation</th><th scope="col">Per second</th></tr></thead>
        <tbody id="live-operations">{{#operations}}<tr>{{#cells}}<td>{{.}}</td>{{/cells}}</tr>{{/operations}}</tbody></table></div>
        <h2>Responses by status</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col">HTTP status</th><th scope="col">Responses</th></tr></thead>
        <tbody id="live-statuses">{{#statuses}}<tr>{{#cells}}<td>{{.}}</td>{{/cells}}</tr>{{/statuses}}</tbody></table></div>
        <h2>API errors by code</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col">serverErrorCode</th><th scope="col">Requests</th></tr></thead>
        <tbody id="live-errors">{{#errorCodes}}<tr>{{#cells}}<td>{{.}}</td>{{/cells}}</tr>{{/errorCodes}}</tbody></table></div>
        <h2>Recent notifications</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col">Container</th><th scope="col">Environment</th><th scope="col">User</th>
        <th scope="col">Kind</th><th scope="col">Subscription</th><th scope="col">Zone</th><th scope="col">Record</th></tr></thead>
        <tbody id="live-notifications">{{#notifications}}<tr>{{#cells}}<td>{{.}}</td>{{/cells}}</tr>{{/notifications}}</tbody></table></div>
        <h2>Log</h2>
        <pre id="live-log">{{log}}</pre>
        {{/body}}{{/layout}}
        """

    static let audit = """
        {{<layout}}{{$body}}
        <h1>Audit log</h1>
        <p class="muted">What operators did with users' data and the schema, newest first.</p>
        <div class="table-wrap"><table><thead><tr><th scope="col">When</th><th scope="col">Operator</th><th scope="col">Action</th><th scope="col">Container</th><th scope="col">Detail</th></tr></thead>
        <tbody>{{#entries}}<tr><td>{{at}}</td><td>{{operator}}</td><td>{{action}}</td><td>{{container}}</td><td>{{detail}}</td></tr>{{/entries}}</tbody></table></div>
        {{/body}}{{/layout}}
        """
}

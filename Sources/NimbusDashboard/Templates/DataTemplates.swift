import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// Zones, records, one record and its forms, the query builder.
enum DataTemplates {
    static let all: [String: String] = [
        "zones": zones, "records": records, "record": record, "recordForm": recordForm, "newField": newField,
        "query": QueryTemplates.query,
    ]

    static let zones = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/container?{{cq}}">{{container}}</a> · {{environment}} · {{database}}</p>
        <h1>Zones</h1>
        <ul>{{#zones}}<li><a href="/dashboard/records?{{q}}">{{zone}}</a></li>{{/zones}}</ul>
        <p>{{#public}}<a href="/dashboard/record/new?{{newQ}}">New record in _defaultZone</a> · {{/public}}
        <a href="/dashboard/zones?{{otherQ}}">The {{otherEnvironment}} environment</a></p>
        {{/body}}{{/layout}}
        """

    static let records = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/zones?{{zonesQ}}">{{container}} · {{environment}}</a> · {{database}}</p>
        <h1>Records of {{zone}}</h1>
        {{#public}}<p><a href="/dashboard/record/new?{{newQ}}">New record</a></p>{{/public}}
        {{#none}}<p class="muted">No records{{#paged}} on this page{{/paged}}.</p>{{/none}}
        <div class="table-wrap"><table id="records">
        <thead><tr><th scope="col">Record name</th><th scope="col">Type</th><th scope="col">Fields</th><th scope="col">Modified</th></tr></thead>
        <tbody>
        {{#records}}<tr><td><a href="/dashboard/record?{{q}}">{{name}}</a></td><td>{{type}}</td><td>{{fields}}</td><td>{{modified}}</td></tr>{{/records}}
        </tbody></table></div>
        <p>{{#paged}}<a href="/dashboard/records?{{first}}">First page</a> {{/paged}}{{#next}}<a href="/dashboard/records?{{next}}" rel="next">Next page</a>{{/next}}</p>
        {{/body}}{{/layout}}
        """

    static let newField = """
        <fieldset>
        <legend>Add a field</legend>
        <div class="grid">
        <label for="newName">Name<input id="newName" name="newName"></label>
        <label for="newType">Type<select id="newType" name="newType">{{#fieldTypes}}<option>{{.}}</option>{{/fieldTypes}}</select></label>
        <label for="newValue">Value<input id="newValue" name="newValue"></label>
        </div>
        <p class="muted">Text for STRING, numbers for INT64, DOUBLE and TIMESTAMP (milliseconds), the API's JSON value for the others.</p>
        </fieldset>
        """

    static let record = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/records?{{recordsQ}}">{{container}} · {{environment}} · {{zone}}</a></p>
        <h1>{{recordName}}</h1>
        {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
        {{#conflict}}<p class="error" role="alert" id="conflict">{{conflict}}</p>{{/conflict}}
        <p>Type <strong id="record-type">{{recordType}}</strong> · change tag <code id="change-tag">{{changeTag}}</code> · <a href="/dashboard/traces?{{traceQ}}" id="trace-link">trace</a></p>
        <p class="muted">Created {{created}} by {{createdBy}} · modified {{modified}} by {{modifiedBy}}</p>
        <div class="table-wrap"><table id="fields">
        <thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Value</th></tr></thead>
        <tbody>
        {{#fields}}<tr><th scope="row">{{name}}</th><td>{{type}}</td><td class="value" data-field="{{name}}">{{text}}
        {{#links}}<div><a href="{{href}}">{{label}}</a></div>{{/links}}
        {{#images}}<img class="asset-preview" src="{{src}}" alt="Preview of {{name}}" loading="lazy">{{/images}}</td></tr>{{/fields}}
        </tbody></table></div>
        {{#public}}<h2>Edit</h2>
        <form method="post" action="/dashboard/record/save" class="edit" id="edit">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <input type="hidden" name="c" value="{{container}}"><input type="hidden" name="env" value="{{environment}}">
          <input type="hidden" name="zone" value="{{zone}}"><input type="hidden" name="recordName" value="{{recordName}}">
          <input type="hidden" name="recordType" value="{{recordType}}"><input type="hidden" name="changeTag" value="{{changeTag}}">
          <div class="grid">
          {{#fields}}{{#editable}}<label for="f-{{name}}">{{name}} ({{type}})
            <input id="f-{{name}}" name="f:{{name}}" value="{{editText}}"></label>
            <input type="hidden" name="t:{{name}}" value="{{type}}"><input type="hidden" name="o:{{name}}" value="{{editText}}">{{/editable}}{{/fields}}
          </div>
          {{>newField}}
          <p><button type="submit">Save</button></p>
        </form>
        <form method="post" action="/dashboard/record/delete" data-confirm="Delete this record?">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <input type="hidden" name="c" value="{{container}}"><input type="hidden" name="env" value="{{environment}}">
          <input type="hidden" name="zone" value="{{zone}}"><input type="hidden" name="recordName" value="{{recordName}}">
          <input type="hidden" name="changeTag" value="{{changeTag}}">
          <button type="submit" class="danger">Delete</button>
        </form>{{/public}}
        <h2>As the API returns it</h2>
        <pre id="record-json">{{json}}</pre>
        {{/body}}{{/layout}}
        """

    static let recordForm = """
        {{<layout}}{{$body}}
        <p><a href="/dashboard/records?{{recordsQ}}">{{container}} · {{environment}} · {{zone}}</a></p>
        <h1>New record</h1>
        <form method="post" action="/dashboard/record/save" class="edit">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <input type="hidden" name="c" value="{{container}}"><input type="hidden" name="env" value="{{environment}}">
          <div class="grid">
          <label for="zone">Zone<input id="zone" name="zone" value="{{zone}}" required></label>
          <label for="recordType">Record type<input id="recordType" name="recordType" required></label>
          <label for="recordName">Record name (empty: a new UUID)<input id="recordName" name="recordName"></label>
          </div>
          {{>newField}}
          <p><button type="submit">Create</button></p>
        </form>
        {{/body}}{{/layout}}
        """
}

//! The conformance target of the MongoDB store on the server in `COSID_TEST_MONGODB_URL`, with raw writes through
//! a client of its own. Shared by core's store test and the CLI's tests of `cosid serve` in front of MongoDB.
#![allow(dead_code)]

use cosid::conformance::{self, Target};
use cosid::lease::{Namespace, NamespaceRecord, SlotRecord};
use cosid::store::{LeaseStore, MongoStore};
use mongodb::bson::{doc, Bson, Document};
use std::sync::Arc;

pub const URL_VAR: &str = "COSID_TEST_MONGODB_URL";
pub const SCRIPT: &str = ".ci/services/ferretdb.sh";
pub const COLLECTION: &str = "cosid_leases";

pub struct Mongo {
    pub store: Arc<MongoStore>,
    pub raw: mongodb::Collection<Document>,
}

/// The document ids, spelled out here rather than taken from the store, so the test pins the layout.
pub fn slot_id(ns: &Namespace, slot: u32) -> String {
    format!("slot/{}/{slot}", ns.encoded())
}

pub fn namespace_id(ns: &Namespace) -> String {
    format!("ns/{}", ns.encoded())
}

impl Target for Mongo {
    fn store(&self) -> Arc<dyn LeaseStore> {
        self.store.clone()
    }

    /// A plain upsert of the document with a client of the test's own, as `mongosh` would do it.
    async fn put_raw(&self, ns: &Namespace, r: &SlotRecord) {
        let rev = self
            .raw
            .find_one(doc! { "_id": slot_id(ns, r.slot) })
            .await
            .unwrap()
            .and_then(|d| d.get_i64("rev").ok())
            .unwrap_or(0);
        let document = slot_document(ns, r, rev + 1);
        self.raw
            .replace_one(doc! { "_id": slot_id(ns, r.slot) }, document)
            .upsert(true)
            .await
            .unwrap();
    }

    async fn put_old_namespace(&self, ns: &Namespace, r: &NamespaceRecord) {
        let document = doc! {
            "_id": namespace_id(ns),
            "ns": ns.encoded(),
            "rev": 1_i64,
            "bits": i64::from(r.bits),
            "tolerance_ms": r.tolerance_ms as i64,
            "not_before": r.not_before as i64,
        };
        self.raw
            .replace_one(doc! { "_id": namespace_id(ns) }, document)
            .upsert(true)
            .await
            .unwrap();
    }
}

/// A slot's document as the store writes it, at `rev`.
pub fn slot_document(ns: &Namespace, r: &SlotRecord, rev: i64) -> Document {
    let owner = match &r.owner {
        Some(o) => Bson::Document(doc! { "key": &o.key, "incarnation": o.incarnation.to_string() }),
        None => Bson::Null,
    };
    doc! {
        "_id": slot_id(ns, r.slot),
        "ns": ns.encoded(),
        "slot": i64::from(r.slot),
        "rev": rev,
        "owner": owner,
        "last_owner_key": r.last_owner_key.clone(),
        "fence": r.fence as i64,
        "expires_at": r.expires_at as i64,
        "floor": r.floor as i64,
        "ceiling": r.ceiling as i64,
        "next_floor": r.next_floor as i64,
    }
}

/// The `_id` of a namespace's lowest-unused hint.
pub fn unused_id(ns: &Namespace) -> String {
    format!("unused/{}", ns.encoded())
}

/// The collection the store uses, through a client of the test's own.
pub async fn raw_collection(url: &str) -> mongodb::Collection<Document> {
    let client = mongodb::Client::with_uri_str(url).await.unwrap();
    let db = client
        .default_database()
        .unwrap_or_else(|| client.database("cosid"));
    db.collection(COLLECTION)
}

/// A target on `url`, once the server answers.
pub async fn connect(url: &str) -> Mongo {
    let store = Arc::new(MongoStore::open(url).await.unwrap());
    store.init().await.unwrap();
    Mongo {
        store,
        raw: raw_collection(url).await,
    }
}

/// A target on the server in `COSID_TEST_MONGODB_URL`, or `None` (saying why) when it is unset.
pub async fn target() -> Option<Mongo> {
    let url = conformance::server_url(URL_VAR, SCRIPT)?;
    Some(connect(&url).await)
}

//! Run-set tags, edited after launch: `GET /api/tags`, `POST /api/tags`,
//! `runboard tag`. An edit is checked whole (`RunTags::apply`: the launch's
//! name rule, run sets that exist) and written atomically under the campaign
//! lock; a tags file that cannot be read is never overwritten.

use runboard::runsets::{TagEdit, TagsView};

use super::{ApiError, Campaign};

impl Campaign {
    /// `GET /api/tags`: every tag with its note and run sets.
    pub fn tags(&self) -> Result<TagsView, ApiError> {
        Ok(self.records.tags().map_err(ApiError::unreadable)?.view(Vec::new()))
    }

    /// `POST /api/tags`: one tag's edit, under the campaign lock; every
    /// reason it is refused at once (nothing is written then).
    pub fn tag_edit(&self, edit: &TagEdit) -> Result<TagsView, ApiError> {
        let _lock = self.lock()?;
        // Read under the lock: an edit never undoes another made meanwhile.
        let mut tags = self.records.tags().map_err(|e| {
            ApiError::unreadable(format!("{e}; it is not overwritten: repair or move it, then edit again"))
        })?;
        let (index, _) = self.records.run_index();
        let folders = self.records.run_sets();
        let known = |rs: &str| index.iter().any(|e| e.run_set == rs) || folders.iter().any(|f| f.name == rs);
        let changed = tags.apply(edit, &known).map_err(ApiError::refused)?;
        if !changed.is_empty() {
            self.records.write_tags(&tags).map_err(|e| crate::web::error::internal("writing the tags", e))?;
        }
        Ok(tags.view(changed))
    }
}

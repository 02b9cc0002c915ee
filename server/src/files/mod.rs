//! File primitives: read-only reads that never follow a FIFO or leave the
//! root, atomic replacement and private files, where the data folder is.

pub mod atomic;
pub mod data_folder;
pub mod fsread;

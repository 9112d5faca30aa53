//! Windows: owner-only security descriptors, opens that never follow a reparse point, folder walks
//! that hold every folder open, and byte-range locks.
//!
//! Owner-only means a protected DACL (no inherited entry) with one entry granting full access to the
//! SID of the user this process runs as, read from the process token, and that user as the owner. A
//! new file or folder is created with that descriptor, so no one else can open it at any moment; an
//! existing one is checked (its owner must be that user) and given that DACL through its open handle
//! before anything is written. Every open adds `FILE_FLAG_OPEN_REPARSE_POINT`, so a symbolic link or
//! a junction at the path is opened itself, seen by its attribute and refused, never followed.
//! Handles are not inheritable: no program the caller starts gets one by accident.
#![allow(unsafe_code)]

use std::ffi::{OsStr, OsString, c_void};
use std::fs::{File, Metadata};
use std::io;
use std::mem::size_of;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::fs::{FileExt, MetadataExt};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::OnceLock;

use windows_sys::Win32::Foundation::{
    ERROR_LOCK_VIOLATION, ERROR_SUCCESS, GENERIC_READ, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE,
    LocalFree,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, GetSecurityInfo,
    SDDL_REVISION_1, SE_FILE_OBJECT, SetSecurityInfo,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, CONTAINER_INHERIT_ACE, DACL_SECURITY_INFORMATION, GetAce,
    GetSecurityDescriptorControl, GetSecurityDescriptorDacl, GetTokenInformation,
    OBJECT_INHERIT_ACE, OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, PSID, SE_DACL_PROTECTED, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
    TokenUser,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, CREATE_NEW, CreateDirectoryW, CreateFileW, FILE_ALL_ACCESS,
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_GENERIC_WRITE, FILE_NAME_NORMALIZED, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE,
    FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_TYPE_DISK, FILE_WRITE_DATA, GetFileInformationByHandle,
    GetFileType, GetFinalPathNameByHandleW, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
    LockFileEx, OPEN_ALWAYS, OPEN_EXISTING, READ_CONTROL, SYNCHRONIZE, UnlockFile, VOLUME_NAME_DOS,
    WRITE_DAC,
};
use windows_sys::Win32::System::IO::OVERLAPPED;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::Access;
use crate::error::{Error, ErrorKind};
use crate::fs::DIR_MODE;

/// The ACE type of an access-allowed entry (`ACCESS_ALLOWED_ACE_TYPE`).
const ACCESS_ALLOWED: u8 = 0;
/// The ACE type of an access-denied entry, laid out as an access-allowed one.
const ACCESS_DENIED: u8 = 1;

/// Opens the name itself, never what a reparse point there (a symbolic link, a junction) leads to;
/// backup semantics let a folder be opened as well, to be recognised and refused or checked.
const NO_FOLLOW: u32 = FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS;
/// What other handles may do to an open file: anything, as std's own opens allow.
const SHARE_ALL: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
/// What other handles may do to a folder of a [`open_within`] walk: no deleting or renaming, so the
/// path below it stays the path that was checked.
const SHARE_WALK: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE;
/// The access every checked open adds: the attributes (to see a reparse point), and the security
/// descriptor, read and written (to check the owner and make the DACL owner-only).
const CHECK: u32 = FILE_READ_ATTRIBUTES | READ_CONTROL | WRITE_DAC;

/// Memory the system allocated with `LocalAlloc` for this process, freed on drop.
struct Local(*mut c_void);

impl Drop for Local {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from a system call that allocates with LocalAlloc and hands
            // the memory over to the caller; it is freed once, here.
            unsafe { LocalFree(self.0) };
        }
    }
}

/// `s` as a NUL-terminated wide string; a NUL inside it is refused, since the system would read a
/// shorter name than the one given.
fn wide(s: &OsStr) -> io::Result<Vec<u16>> {
    let mut wide: Vec<u16> = s.encode_wide().collect();
    if wide.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path holds a NUL character; give a path without one",
        ));
    }
    wide.push(0);
    Ok(wide)
}

/// The SID (`S-1-5-21-…`) of the user this process runs as, read once from the process token.
fn user_sid() -> io::Result<&'static str> {
    static SID: OnceLock<String> = OnceLock::new();
    if let Some(sid) = SID.get() {
        return Ok(sid);
    }
    let sid = token_user_sid()?;
    Ok(SID.get_or_init(|| sid))
}

fn token_user_sid() -> io::Result<String> {
    let mut token: HANDLE = ptr::null_mut();
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing; `token` is a valid
    // place for the token handle.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: OpenProcessToken succeeded, so `token` is an open handle that nothing else owns.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut len = 0u32;
    // SAFETY: a null buffer of length 0 only asks for the length needed, written to `len` (the call
    // fails with ERROR_INSUFFICIENT_BUFFER, as it should).
    unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            ptr::null_mut(),
            0,
            &mut len,
        )
    };
    // Whole u64s keep the buffer aligned for the TOKEN_USER at its start.
    let mut buf = vec![0u64; (len as usize).div_ceil(size_of::<u64>()).max(1)];
    let size = u32::try_from(buf.len() * size_of::<u64>()).unwrap_or(u32::MAX);
    // SAFETY: `buf` is writable for `size` bytes and aligned for TOKEN_USER.
    let ok = unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            buf.as_mut_ptr().cast(),
            size,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: on success the buffer starts with a TOKEN_USER whose SID points into the buffer, which
    // lives until after the SID is read.
    unsafe {
        let user = &*buf.as_ptr().cast::<TOKEN_USER>();
        sid_string(user.User.Sid)
    }
}

/// The string form (`S-1-5-21-…`) of the SID at `sid`.
///
/// # Safety
///
/// `sid` must point to a valid SID.
unsafe fn sid_string(sid: PSID) -> io::Result<String> {
    let mut out: *mut u16 = ptr::null_mut();
    // SAFETY: `sid` is valid (the caller's promise); `out` receives a LocalAlloc'd string.
    if unsafe { ConvertSidToStringSidW(sid, &mut out) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let _free = Local(out.cast());
    // SAFETY: on success `out` is a NUL-terminated wide string, read up to its NUL.
    let chars = unsafe {
        let len = (0..).take_while(|&i| *out.add(i) != 0).count();
        std::slice::from_raw_parts(out, len)
    };
    Ok(String::from_utf16_lossy(chars))
}

/// An owner-only security descriptor: owned by this process's user, with a protected DACL that
/// grants that user full access and nobody else anything; for a folder the entry is inherited by
/// what is created in it.
struct OwnerOnly(Local);

impl OwnerOnly {
    fn new(folder: bool) -> io::Result<Self> {
        let sid = user_sid()?;
        let inherit = if folder { "OICI" } else { "" };
        let sddl = wide(OsStr::new(&format!("O:{sid}D:P(A;{inherit};FA;;;{sid})")))?;
        let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
        // SAFETY: `sddl` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor; the size
        // output is optional.
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut sd,
                ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self(Local(sd)))
    }

    /// Attributes for a create call: this descriptor, and a handle no child process inherits. The
    /// descriptor is borrowed: `self` must outlive the call.
    fn attributes(&self) -> SECURITY_ATTRIBUTES {
        SECURITY_ATTRIBUTES {
            nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: self.0.0,
            bInheritHandle: 0,
        }
    }

    /// The descriptor's DACL, pointing into it.
    fn dacl(&self) -> io::Result<*const ACL> {
        let (mut present, mut defaulted) = (0, 0);
        let mut dacl: *mut ACL = ptr::null_mut();
        // SAFETY: `self.0` is a valid descriptor; the outputs are valid places to write.
        let ok =
            unsafe { GetSecurityDescriptorDacl(self.0.0, &mut present, &mut dacl, &mut defaulted) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(dacl)
    }
}

/// One entry of a DACL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ace {
    /// `ACCESS_ALLOWED`, `ACCESS_DENIED` or another ACE type.
    kind: u8,
    /// The inheritance flags.
    flags: u8,
    /// The access mask (allowed and denied entries only).
    mask: u32,
    /// The SID it is about (allowed and denied entries only).
    sid: String,
}

/// The owner and DACL of an object, as read through its handle.
#[derive(Debug)]
struct Security {
    /// The owner's SID.
    owner: String,
    /// Whether the DACL is protected from inheriting entries of the folder above.
    protected: bool,
    /// The DACL's entries; `None` for a null DACL, which lets everyone in.
    aces: Option<Vec<Ace>>,
}

impl Security {
    /// Whether the DACL is the owner-only one: protected, one entry granting `user` everything,
    /// inherited by what a folder holds.
    fn is_owner_only(&self, user: &str, folder: bool) -> bool {
        let flags = if folder {
            (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) as u8
        } else {
            0
        };
        let only = Ace {
            kind: ACCESS_ALLOWED,
            flags,
            mask: FILE_ALL_ACCESS,
            sid: user.to_owned(),
        };
        self.protected && self.aces.as_deref() == Some(std::slice::from_ref(&only))
    }
}

/// Reads the owner and the DACL of the object open as `file`.
fn security(file: &File) -> io::Result<Security> {
    let mut owner: PSID = ptr::null_mut();
    let mut dacl: *mut ACL = ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: `file` is an open handle with READ_CONTROL; the outputs are valid places to write; the
    // descriptor is allocated for the caller and freed by `_free`.
    let err = unsafe {
        GetSecurityInfo(
            file.as_raw_handle(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            ptr::null_mut(),
            &mut dacl,
            ptr::null_mut(),
            &mut sd,
        )
    };
    if err != ERROR_SUCCESS {
        return Err(io::Error::from_raw_os_error(err as i32));
    }
    let _free = Local(sd);
    let (mut control, mut revision) = (0u16, 0u32);
    // SAFETY: `sd` is the valid descriptor GetSecurityInfo returned.
    if unsafe { GetSecurityDescriptorControl(sd, &mut control, &mut revision) } == 0 {
        return Err(io::Error::last_os_error());
    }
    if owner.is_null() {
        return Err(io::Error::other("the file has no owner"));
    }
    // SAFETY: `owner` points to a SID inside `sd`, which lives until the end of this function.
    let owner = unsafe { sid_string(owner) }?;
    let aces = if dacl.is_null() {
        None
    } else {
        // SAFETY: `dacl` points to a valid ACL inside `sd`.
        let count = unsafe { (*dacl).AceCount };
        let mut aces = Vec::with_capacity(count.into());
        for i in 0..u32::from(count) {
            let mut ace: *mut c_void = ptr::null_mut();
            // SAFETY: `i` is below the ACL's entry count; `ace` receives a pointer into the ACL.
            if unsafe { GetAce(dacl, i, &mut ace) } == 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: every entry starts with an ACE_HEADER.
            let header = unsafe { *ace.cast::<ACE_HEADER>() };
            let (mask, sid) = if matches!(header.AceType, ACCESS_ALLOWED | ACCESS_DENIED) {
                // SAFETY: allowed and denied entries are laid out as ACCESS_ALLOWED_ACE, the SID
                // starting at `SidStart`, all inside `sd`.
                unsafe {
                    let allowed = ace.cast::<ACCESS_ALLOWED_ACE>();
                    let sid = ptr::addr_of_mut!((*allowed).SidStart).cast::<c_void>();
                    ((*allowed).Mask, sid_string(sid)?)
                }
            } else {
                (0, String::new())
            };
            aces.push(Ace {
                kind: header.AceType,
                flags: header.AceFlags,
                mask,
                sid,
            });
        }
        Some(aces)
    };
    Ok(Security {
        owner,
        protected: control & SE_DACL_PROTECTED != 0,
        aces,
    })
}

/// Checks that the object open as `file` at `path` is owned by this process's user, and makes its DACL
/// owner-only when it is not already; through the open handle, so the object checked is the object
/// changed. `mode` is the Unix mode the call stands for, kept in the error.
fn own_owner_only(file: &File, path: &Path, folder: bool, mode: u32) -> Result<(), Error> {
    let user = user_sid().map_err(|e| Error::open(path, e))?;
    let found = security(file).map_err(|e| Error::open(path, e))?;
    if found.owner != user {
        return Err(ErrorKind::NotOwner {
            path: path.to_owned(),
            owner: format!("SID {}", found.owner),
            user: format!("SID {user}"),
        }
        .into());
    }
    if found.is_owner_only(user, folder) {
        return Ok(());
    }
    let set_mode = |e: io::Error| -> Error {
        ErrorKind::SetMode {
            path: path.to_owned(),
            mode,
            source: e.into(),
        }
        .into()
    };
    let sd = OwnerOnly::new(folder).map_err(set_mode)?;
    let dacl = sd.dacl().map_err(set_mode)?;
    // SAFETY: `file` is open with WRITE_DAC; `dacl` points into `sd`, which outlives the call; no
    // owner, group or SACL is set.
    let err = unsafe {
        SetSecurityInfo(
            file.as_raw_handle(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            ptr::null_mut(),
            ptr::null_mut(),
            dacl,
            ptr::null(),
        )
    };
    if err != ERROR_SUCCESS {
        return Err(set_mode(io::Error::from_raw_os_error(err as i32)));
    }
    Ok(())
}

/// `CreateFileW` on `path`, with the owner-only descriptor `sd` for a file it creates; the handle is
/// not inheritable.
fn create_file(
    path: &Path,
    access: u32,
    share: u32,
    disposition: u32,
    flags: u32,
    sd: Option<&OwnerOnly>,
) -> io::Result<File> {
    let name = wide(path.as_os_str())?;
    let attributes = sd.map(OwnerOnly::attributes);
    let attributes_ptr = attributes
        .as_ref()
        .map_or(ptr::null(), |a| a as *const SECURITY_ATTRIBUTES);
    // SAFETY: `name` is NUL-terminated; `attributes_ptr` is null or points to attributes whose
    // descriptor lives in `sd`; both outlive the call; there is no template file.
    let handle = unsafe {
        CreateFileW(
            name.as_ptr(),
            access,
            share,
            attributes_ptr,
            disposition,
            flags,
            ptr::null_mut(),
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CreateFileW succeeded: `handle` is an open file handle that nothing else owns.
    Ok(unsafe { File::from_raw_handle(handle) })
}

/// Creates the folder `path`, owner-only.
fn create_dir(path: &Path, sd: &OwnerOnly) -> io::Result<()> {
    let name = wide(path.as_os_str())?;
    let attributes = sd.attributes();
    // SAFETY: `name` is NUL-terminated; `attributes` and the descriptor in `sd` outlive the call.
    if unsafe { CreateDirectoryW(name.as_ptr(), &attributes) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `file` is a file on a disk (not a pipe, a console or another device).
fn is_disk(file: &File) -> bool {
    // SAFETY: `file` is an open handle.
    unsafe { GetFileType(file.as_raw_handle()) == FILE_TYPE_DISK }
}

fn is_reparse(meta: &Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

/// The volume and index that name the file open as `file` on its machine.
fn file_id(file: &File) -> io::Result<(u32, u64)> {
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: `file` is an open handle; `info` is a valid place to write.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((info.dwVolumeSerialNumber, index))
}

/// The full path of the object open as `file`, as a `\\?\` path that the system takes as it is.
fn final_path(file: &File) -> io::Result<PathBuf> {
    let mut buf = vec![0u16; 512];
    loop {
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        // SAFETY: `file` is an open handle; `buf` is writable for `len` characters.
        let n = unsafe {
            GetFinalPathNameByHandleW(
                file.as_raw_handle(),
                buf.as_mut_ptr(),
                len,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        } as usize;
        if n == 0 {
            return Err(io::Error::last_os_error());
        }
        if n < buf.len() {
            buf.truncate(n);
            return Ok(PathBuf::from(OsString::from_wide(&buf)));
        }
        buf.resize(n, 0);
    }
}

/// Refuses what `file` (open at `path` without following a reparse point) must not be written or
/// read as: a reparse point is [`ErrorKind::Symlink`], anything but a regular file on a disk
/// [`ErrorKind::NotAFile`].
fn checked_file(file: &File, path: &Path) -> Result<Metadata, Error> {
    let meta = file.metadata();
    if meta.as_ref().is_ok_and(is_reparse) {
        return Err(ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into());
    }
    if !is_disk(file) || meta.as_ref().is_ok_and(|m| !m.is_file()) {
        return Err(ErrorKind::NotAFile {
            path: path.to_owned(),
        }
        .into());
    }
    meta.map_err(|e| Error::open(path, e))
}

/// Opens `path` with `access` under the crate's file rules, or says why it is refused; every file
/// this crate writes is opened here.
///
/// The open never follows a reparse point (a symbolic link or a junction at the path is refused) and
/// creates a missing file owner-only. The file must be a regular file (a named pipe is never taken,
/// whatever `fifo_ok` says) owned by this process's user, and its DACL is made owner-only through the
/// open handle before anything is written, so a file that cannot be made owner-only is never
/// written to. Append access is `FILE_APPEND_DATA` without `FILE_WRITE_DATA`, so every write goes to
/// the end of the file. `mode` is the Unix mode the call stands for, kept in a refusal.
pub(crate) fn open_checked(
    path: &Path,
    access: Access,
    mode: u32,
    _fifo_ok: bool,
) -> Result<(File, Metadata), Error> {
    let (rights, disposition) = match access {
        Access::CreateNew => (GENERIC_WRITE, CREATE_NEW),
        Access::Append => (FILE_GENERIC_WRITE & !FILE_WRITE_DATA, OPEN_ALWAYS),
        Access::Write => (GENERIC_WRITE, OPEN_ALWAYS),
        Access::ReadWrite => (GENERIC_READ | GENERIC_WRITE, OPEN_ALWAYS),
    };
    let sd = OwnerOnly::new(false).map_err(|e| Error::open(path, e))?;
    let file = create_file(
        path,
        rights | CHECK,
        SHARE_ALL,
        disposition,
        NO_FOLLOW,
        Some(&sd),
    )
    .map_err(|e| open_error(path, e))?;
    let meta = checked_file(&file, path)?;
    own_owner_only(&file, path, false, mode)?;
    Ok((file, meta))
}

/// Opens what is at `path` itself, never through a reparse point, to read its attributes and its
/// security descriptor.
fn open_to_inspect(path: &Path) -> io::Result<File> {
    create_file(
        path,
        FILE_READ_ATTRIBUTES | READ_CONTROL,
        SHARE_ALL,
        OPEN_EXISTING,
        NO_FOLLOW,
        None,
    )
}

/// Whether the file at `path` (not followed if it is a reparse point) is owned by this process's user
/// and its DACL is the owner-only one.
pub(crate) fn is_owner_only(path: &Path) -> Result<bool, Error> {
    let file = open_to_inspect(path).map_err(|e| open_error(path, e))?;
    let meta = file.metadata().map_err(|e| Error::open(path, e))?;
    let user = user_sid().map_err(|e| Error::open(path, e))?;
    let found = security(&file).map_err(|e| Error::open(path, e))?;
    Ok(!is_reparse(&meta) && found.owner == user && found.is_owner_only(user, meta.is_dir()))
}

/// The error for a failed no-follow open of `path`: a reparse point there (a symbolic link, a
/// junction) is named as such, whatever the open said about it.
pub(crate) fn open_error(path: &Path, e: io::Error) -> Error {
    opened_below(path, path, e)
}

/// Whether `meta`, read without following a link, is a reparse point's: a symbolic link, a junction,
/// or another kind the file rules do not see through.
pub(crate) fn is_link(meta: &Metadata) -> bool {
    is_reparse(meta)
}

/// Always false: a named pipe is never taken as a file on Windows.
pub(crate) fn is_fifo(_meta: &Metadata) -> bool {
    false
}

fn is_symlink(path: &Path) -> bool {
    path.symlink_metadata()
        .map(|m| is_link(&m))
        .unwrap_or(false)
}

/// Whether the file open as `file` (checked as `meta`) is non-empty and its last byte is not a
/// newline. Read through a second, read-only handle (the writer's may only append), trusted only when
/// it is the same file.
pub(crate) fn ends_in_a_cut_line(path: &Path, file: &File, meta: &Metadata) -> bool {
    if meta.len() == 0 {
        return false;
    }
    let Ok(reader) = create_file(
        path,
        GENERIC_READ,
        SHARE_ALL,
        OPEN_EXISTING,
        NO_FOLLOW,
        None,
    ) else {
        return false;
    };
    let (Ok(ours), Ok(theirs), Ok(now)) = (file_id(file), file_id(&reader), reader.metadata())
    else {
        return false;
    };
    if ours != theirs || now.len() == 0 {
        return false;
    }
    let mut last = [0u8];
    matches!(reader.seek_read(&mut last, now.len() - 1), Ok(1)) && last[0] != b'\n'
}

/// Opens `path` to read without following a reparse point there: one is [`ErrorKind::Symlink`], and
/// what is not a file on a disk (a pipe, a device) [`ErrorKind::NotAFile`]. Whether it is a regular
/// file or a folder is the caller's to check.
pub(crate) fn open_read(path: &Path) -> Result<File, Error> {
    let file = create_file(
        path,
        GENERIC_READ,
        SHARE_ALL,
        OPEN_EXISTING,
        NO_FOLLOW,
        None,
    )
    .map_err(|e| open_error(path, e))?;
    if !is_disk(&file) {
        return Err(ErrorKind::NotAFile {
            path: path.to_owned(),
        }
        .into());
    }
    let meta = file.metadata().map_err(|e| Error::read(path, e))?;
    if is_reparse(&meta) {
        return Err(ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into());
    }
    Ok(file)
}

/// Opens `folders` then `last` below the folder `dir`, one name at a time, and returns the last one
/// open with its path for messages.
///
/// The folder `dir` is opened as given, links and all; the walk then goes on from its real path, and
/// each name is opened without following a reparse point (one is [`ErrorKind::Symlink`]; a name that
/// is not a folder where one was wanted is [`ErrorKind::NotAFolder`]). Every folder of the walk is
/// held open until the last name is, and without sharing delete access, so no folder of the walk can
/// be renamed or replaced while it goes on: the path opened is the path checked.
pub(crate) fn open_within(
    dir: &Path,
    folders: &[&OsStr],
    last: &OsStr,
) -> Result<(File, PathBuf), Error> {
    const WALK: u32 = FILE_READ_ATTRIBUTES | SYNCHRONIZE;
    let top = create_file(
        dir,
        WALK,
        SHARE_WALK,
        OPEN_EXISTING,
        FILE_FLAG_BACKUP_SEMANTICS,
        None,
    )
    .map_err(|e| Error::open(dir, e))?;
    let meta = top.metadata().map_err(|e| Error::open(dir, e))?;
    if !meta.is_dir() {
        return Err(Error::open(dir, io::ErrorKind::NotADirectory.into()));
    }
    let mut real = final_path(&top).map_err(|e| Error::open(dir, e))?;
    let mut held = vec![top];
    let mut path = dir.to_path_buf();
    for name in folders {
        path.push(name);
        real.push(name);
        let folder = create_file(&real, WALK, SHARE_WALK, OPEN_EXISTING, NO_FOLLOW, None)
            .map_err(|e| opened_below(&real, &path, e))?;
        let meta = folder.metadata().map_err(|e| Error::open(&path, e))?;
        if is_reparse(&meta) {
            return Err(ErrorKind::Symlink { path }.into());
        }
        if !meta.is_dir() {
            return Err(ErrorKind::NotAFolder { path }.into());
        }
        held.push(folder);
    }
    path.push(last);
    real.push(last);
    let file = create_file(
        &real,
        GENERIC_READ,
        SHARE_ALL,
        OPEN_EXISTING,
        NO_FOLLOW,
        None,
    )
    .map_err(|e| opened_below(&real, &path, e))?;
    if !is_disk(&file) {
        return Err(ErrorKind::NotAFile { path }.into());
    }
    let meta = file.metadata().map_err(|e| Error::read(&path, e))?;
    if is_reparse(&meta) {
        return Err(ErrorKind::Symlink { path }.into());
    }
    drop(held);
    Ok((file, path))
}

/// The error of opening `real` in a walk (`path` for the message): a reparse point there is
/// [`ErrorKind::Symlink`].
fn opened_below(real: &Path, path: &Path, e: io::Error) -> Error {
    if is_symlink(real) {
        ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into()
    } else {
        Error::open(path, e)
    }
}

/// Creates the folder at `path` and any missing folder above it, each owner-only from its creation;
/// an existing folder is left as it is.
pub(crate) fn make_dirs(path: &Path) -> io::Result<()> {
    let sd = OwnerOnly::new(true)?;
    make_dirs_with(path, &sd)
}

fn make_dirs_with(path: &Path, sd: &OwnerOnly) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    match create_dir(path, sd) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(_) if path.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    match path.parent() {
        Some(parent) => make_dirs_with(parent, sd)?,
        None => return Err(io::Error::other("failed to create the whole folder tree")),
    }
    match create_dir(path, sd) {
        Ok(()) => Ok(()),
        Err(_) if path.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes the existing folder at `path` owner-only, refusing one another user owns: its owner is
/// checked and its DACL set through a handle that did not follow a reparse point.
pub(crate) fn make_private(path: &Path) -> Result<(), Error> {
    let dir = create_file(path, CHECK, SHARE_ALL, OPEN_EXISTING, NO_FOLLOW, None)
        .map_err(|e| open_error(path, e))?;
    let meta = dir.metadata().map_err(|e| Error::open(path, e))?;
    if is_reparse(&meta) {
        return Err(ErrorKind::Symlink {
            path: path.to_owned(),
        }
        .into());
    }
    if !meta.is_dir() {
        return Err(ErrorKind::NotAFolder {
            path: path.to_owned(),
        }
        .into());
    }
    own_owner_only(&dir, path, true, DIR_MODE)
}

/// Creates the temporary file `temp` of a rewrite of `path`: new, never through a reparse point, and
/// owner-only from its creation.
pub(crate) fn create_temp(path: &Path, temp: &Path) -> Result<File, Error> {
    let sd = OwnerOnly::new(false)
        .map_err(|e| Error::rewrite(path, "making the temporary file owner-only", e))?;
    create_file(
        temp,
        GENERIC_WRITE | FILE_READ_ATTRIBUTES,
        SHARE_ALL,
        CREATE_NEW,
        NO_FOLLOW,
        Some(&sd),
    )
    .map_err(|e| Error::rewrite(path, "creating the temporary file", e))
}

/// Nothing: Windows gives programs no way to flush a folder's entries, so a rename is as durable as
/// the file system's own journal makes it.
pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Takes an exclusive lock on the whole of `file` (`LockFileEx`), waiting for it when `wait`;
/// `Ok(false)` when another holds it and `wait` is false. The system releases it when the handle
/// closes or the process ends.
pub(crate) fn lock(file: &File, wait: bool) -> io::Result<bool> {
    let flags = if wait {
        LOCKFILE_EXCLUSIVE_LOCK
    } else {
        LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY
    };
    // The range starts at offset 0 (the OVERLAPPED's offset) and covers every byte.
    let mut overlapped = OVERLAPPED::default();
    // SAFETY: `file` is an open handle for synchronous I/O, so the call returns once the lock is
    // taken or refused, while `overlapped` still lives.
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle(),
            flags,
            0,
            u32::MAX,
            u32::MAX,
            &mut overlapped,
        )
    };
    if ok != 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Releases the lock [`lock`] took on `file`.
pub(crate) fn unlock(file: &File) {
    // SAFETY: `file` is an open handle; unlocking a range it does not hold only fails.
    unsafe { UnlockFile(file.as_raw_handle(), 0, 0, u32::MAX, u32::MAX) };
}

/// Whether the system keeps the security descriptors this module sets on files. Windows does; Wine
/// does not (it derives them from the Unix mode of the file on the host), so there the tests skip
/// what they read back.
#[cfg(test)]
pub(crate) fn keeps_file_security() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    let ntdll = wide(OsStr::new("ntdll.dll")).unwrap();
    // SAFETY: `ntdll` is NUL-terminated; ntdll is loaded in every process, and its handle needs no
    // release; the export name is a NUL-terminated byte string.
    unsafe {
        let module = GetModuleHandleW(ntdll.as_ptr());
        module.is_null() || GetProcAddress(module, c"wine_get_version".as_ptr().cast()).is_none()
    }
}

/// Asserts that what is at `path` is owner-only, where the system keeps that.
#[cfg(test)]
pub(crate) fn assert_owner_only(path: &Path) {
    if keeps_file_security() {
        assert!(is_owner_only(path).unwrap(), "{}", path.display());
    } else {
        eprintln!(
            "skipped: this system does not keep security descriptors of files, so {} cannot be \
             checked",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs;
    use std::io::Write;

    /// The owner and DACL of what is at `path`, read without following a reparse point.
    fn security_of(path: &Path) -> Security {
        let file = open_to_inspect(path).unwrap();
        security(&file).unwrap()
    }

    /// Asserts that `path` is owned by this user and its DACL has exactly one entry, for this user.
    fn assert_owner_only(path: &Path, folder: bool) {
        if !keeps_file_security() {
            return super::assert_owner_only(path);
        }
        let user = user_sid().unwrap();
        let found = security_of(path);
        assert_eq!(found.owner, user, "{}", path.display());
        assert!(found.protected, "{}: {found:?}", path.display());
        let flags = if folder {
            (OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE) as u8
        } else {
            0
        };
        let want = vec![Ace {
            kind: ACCESS_ALLOWED,
            flags,
            mask: FILE_ALL_ACCESS,
            sid: user.to_owned(),
        }];
        assert_eq!(found.aces, Some(want), "{}", path.display());
        assert!(fs::is_owner_only(path).unwrap(), "{}", path.display());
    }

    /// A symbolic link at `link` to `target`, or `None` when this account may not make one (it needs
    /// the privilege to create symbolic links, or developer mode).
    fn symlink(target: &Path, link: &Path, folder: bool) -> Option<()> {
        let made = if folder {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        };
        match made {
            Ok(()) if link.symlink_metadata().is_ok_and(|m| is_link(&m)) => Some(()),
            Ok(()) => {
                eprintln!(
                    "skipped: creating a symbolic link at {} reported success but made none",
                    link.display()
                );
                None
            }
            Err(e) => {
                eprintln!(
                    "skipped: cannot create a symbolic link at {} ({e}); run with the privilege to \
                     create symbolic links or in developer mode to test it",
                    link.display()
                );
                None
            }
        }
    }

    /// A junction at `link` to the folder `target`, or `None` when `mklink /J` is not there.
    fn junction(target: &Path, link: &Path) -> Option<()> {
        let made = std::process::Command::new("cmd")
            .args(["/C", "mklink", "/J"])
            .arg(link)
            .arg(target)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            && link.symlink_metadata().is_ok_and(|m| is_link(&m));
        if !made {
            eprintln!(
                "skipped: `cmd /C mklink /J` could not create a junction at {}",
                link.display()
            );
        }
        made.then_some(())
    }

    #[test]
    fn the_user_sid_comes_from_the_process_token() {
        let sid = user_sid().unwrap();
        assert!(sid.starts_with("S-1-"), "{sid}");
        assert_eq!(user_sid().unwrap(), sid);
    }

    #[test]
    fn every_new_file_and_folder_has_one_entry_for_this_user_alone() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a").join("b");
        fs::create_dir_all(&folder).unwrap();
        assert_owner_only(&dir.path().join("a"), true);
        assert_owner_only(&folder, true);

        fs::create_new(folder.join("new"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
        fs::append(folder.join("appended"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
        fs::truncate(folder.join("truncated"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
        fs::write_atomic(folder.join("replaced"), b"x").unwrap();
        crate::rewrite(folder.join("rewritten"), ["{}"]).unwrap();
        drop(fs::FileLock::try_acquire(folder.join("held.lock")).unwrap());
        for name in [
            "new",
            "appended",
            "truncated",
            "replaced",
            "rewritten",
            "held.lock",
        ] {
            assert_owner_only(&folder.join(name), false);
        }
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 6);
    }

    #[test]
    fn an_existing_file_or_folder_is_made_owner_only_and_keeps_its_content() {
        let dir = tempfile::tempdir().unwrap();
        type Step = fn(&Path) -> Result<(), Error>;
        let cases: [(&str, Step, &str); 3] = [
            (
                "appended",
                |p| {
                    fs::append(p)?
                        .write_all(b"x")
                        .map_err(|e| Error::write(p, e))
                },
                "old x",
            ),
            (
                "truncated",
                |p| {
                    fs::truncate(p)?
                        .write_all(b"x")
                        .map_err(|e| Error::write(p, e))
                },
                "x",
            ),
            ("replaced", |p| fs::write_atomic(p, b"x"), "x"),
        ];
        for (name, step, want) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, "old ").unwrap();
            step(&path).unwrap();
            assert_owner_only(&path, false);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), want, "{name}");
        }

        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        let before = security_of(&shared);
        fs::create_dir_all(&shared).unwrap();
        assert_eq!(
            security_of(&shared).aces,
            before.aces,
            "an existing folder is kept as it is"
        );
        fs::private_dir(&shared).unwrap();
        assert_owner_only(&shared, true);
    }

    #[test]
    fn a_cut_last_line_is_ended_through_an_append_only_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":").unwrap();
        let writer = crate::SyncJsonlWriter::open(&path, crate::Options::default());
        writer.append_line("{}");
        assert_eq!(writer.close().lines_written, 1);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":\n{}\n"
        );
        assert_owner_only(&path, false);
    }

    #[test]
    fn a_link_at_the_path_is_refused_by_name_and_its_target_untouched() {
        type Step = fn(&Path) -> Result<(), Error>;
        let steps: [(&str, Step); 8] = [
            ("create_new", |p| fs::create_new(p).map(drop)),
            ("append", |p| fs::append(p).map(drop)),
            ("truncate", |p| fs::truncate(p).map(drop)),
            ("write_atomic", |p| fs::write_atomic(p, b"new")),
            ("read", |p| fs::read(p).map(drop)),
            ("lock", |p| fs::FileLock::try_acquire(p).map(drop)),
            ("private_dir", |p| fs::private_dir(p)),
            ("create_dir_all", |p| fs::create_dir_all(p)),
        ];
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let folder = dir.path().join("folder");
        std::fs::create_dir(&folder).unwrap();
        let (target_before, folder_before) = (security_of(&target), security_of(&folder));

        let mut links = Vec::new();
        for (i, (points_at, is_folder)) in [
            (&target, false),
            (&dir.path().join("nowhere"), false),
            (&folder, true),
        ]
        .into_iter()
        .enumerate()
        {
            let link = dir.path().join(format!("link{i}"));
            if symlink(points_at, &link, is_folder).is_some() {
                links.push(link);
            }
        }
        let junction_at = dir.path().join("junction");
        if junction(&folder, &junction_at).is_some() {
            links.push(junction_at);
        }
        for link in &links {
            for (name, step) in steps {
                let Err(err) = step(link) else {
                    panic!("{name} {}: went through the link", link.display());
                };
                assert!(
                    matches!(err.kind(), ErrorKind::Symlink { .. }),
                    "{name} {}: {err}",
                    link.display()
                );
                assert!(
                    err.to_string().starts_with(&link.display().to_string()),
                    "{name}: {err}"
                );
            }
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(security_of(&target).aces, target_before.aces);
        assert_eq!(security_of(&folder).aces, folder_before.aces);
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
        assert!(!dir.path().join("nowhere").exists());
    }

    #[test]
    fn read_within_reads_only_regular_files_inside_the_folder_never_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("recordings");
        std::fs::create_dir_all(dir.join("audio")).unwrap();
        std::fs::write(dir.join("audio").join("a.wav"), "RIFF").unwrap();
        std::fs::write(dir.join("big.wav"), vec![b'x'; 1025]).unwrap();
        std::fs::create_dir(root.path().join("elsewhere")).unwrap();
        std::fs::write(root.path().join("elsewhere").join("b.wav"), "RIFF").unwrap();

        assert_eq!(fs::read_within(&dir, "audio/a.wav", 1024).unwrap(), b"RIFF");
        assert_eq!(
            fs::read_within(&dir, r"audio\a.wav", 1024).unwrap(),
            b"RIFF"
        );
        type Kind = fn(&ErrorKind) -> bool;
        let outside: Kind = |k| matches!(k, ErrorKind::OutsideFolder { .. });
        let mut cases: Vec<(String, Kind)> = vec![
            ("audio".into(), |k| matches!(k, ErrorKind::NotAFile { .. })),
            ("big.wav".into(), |k| {
                matches!(k, ErrorKind::TooLarge { max: 1024, .. })
            }),
            ("audio/a.wav/x".into(), |k| {
                matches!(k, ErrorKind::NotAFolder { .. })
            }),
            ("../elsewhere/b.wav".into(), outside),
            ("./audio/a.wav".into(), outside),
            (r"C:\Windows\win.ini".into(), outside),
            ("C:audio".into(), outside),
            (r"\audio\a.wav".into(), outside),
            (r"\\?\C:\Windows\win.ini".into(), outside),
            (String::new(), outside),
        ];
        if junction(&root.path().join("elsewhere"), &dir.join("joined")).is_some() {
            cases.push(("joined/b.wav".into(), |k| {
                matches!(k, ErrorKind::Symlink { .. })
            }));
        }
        let outside_file = root.path().join("elsewhere").join("b.wav");
        if symlink(&outside_file, &dir.join("outside.wav"), false).is_some() {
            cases.push(("outside.wav".into(), |k| {
                matches!(k, ErrorKind::Symlink { .. })
            }));
        }
        for (rel, kind) in cases {
            let err = fs::read_within(&dir, &rel, 1024).unwrap_err();
            assert!(kind(err.kind()), "{rel}: {err}");
        }
    }

    #[test]
    fn a_lock_is_exclusive_until_dropped_or_its_file_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry.lock");
        let held = fs::FileLock::try_acquire(&path).unwrap().unwrap();
        assert!(fs::FileLock::try_acquire(&path).unwrap().is_none());
        drop(held);
        let file = fs::FileLock::try_acquire(&path)
            .unwrap()
            .unwrap()
            .into_file();
        assert!(fs::FileLock::try_acquire(&path).unwrap().is_none());
        drop(file);
        assert!(fs::FileLock::acquire(&path).is_ok());
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = fs::read(dir.path()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotAFile { .. }), "{err}");
        let err = fs::append(dir.path()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotAFile { .. }), "{err}");
        let err = fs::read("NUL").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotAFile { .. }), "{err}");
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let err = fs::create_dir_all(&file).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotAFolder { .. }), "{err}");
        let err = fs::create_new(&file).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Open { .. }), "{err}");
    }

    #[test]
    fn messages_name_the_owners_by_sid() {
        let err: Error = ErrorKind::NotOwner {
            path: "a.jsonl".into(),
            owner: "SID S-1-5-32-544".into(),
            user: "SID S-1-5-21-1-2-3-1001".into(),
        }
        .into();
        assert_eq!(
            err.to_string(),
            "a.jsonl: owned by SID S-1-5-32-544, not by this process's SID S-1-5-21-1-2-3-1001; \
             refusing to write a file another user controls, remove it or choose another path"
        );
        let err: Error = ErrorKind::SetMode {
            path: "a.jsonl".into(),
            mode: 0o600,
            source: io::Error::from_raw_os_error(5).into(),
        }
        .into();
        assert!(
            err.to_string()
                .starts_with("a.jsonl: cannot make it owner-only"),
            "{err}"
        );
    }
}

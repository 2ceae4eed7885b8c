ALTER TABLE `session` ADD `path` text;

ALTER TABLE `session` ADD `metadata` text;
